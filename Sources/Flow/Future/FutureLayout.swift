/// Every assumption the futures core makes about the memory layout of its own types, in one place,
/// each with the check that holds it, in release builds too.
///
/// The core reads some fields by address rather than by name, where naming them would cost what the
/// hot paths cannot afford (a modifying access that ThreadSanitizer reports when two threads read at
/// once, a copy that retains and releases, a metadata lookup in unspecialised code):
///
/// - **Field addresses.** A ``Future``'s stored fields are laid out in the order they are declared,
///   after the object's header: ``Future/storageWords`` at ``storageOffset``,
///   ``Future/recipeSlot`` at ``recipeSlotOffset``. ``checkFieldAddresses(of:)`` compares these with
///   the fields' real addresses for every future made; the comparison is of constants, which the
///   optimiser folds away when they agree, and stops the process when they do not.
/// - **The recipe slot, type-punned.** A future made from an operation keeps its recipe there; a
///   ``ChainedFuture`` keeps its step, with the same size (``checkStepFitsRecipeSlot(_:)``), and
///   puts a `nil` recipe back before the base class destroys the slot. Both recipe and step are
///   handled in unspecialised code as their `Never` forms, which have the same layout whatever the
///   types: every case holds a scheduler and a closure.
/// - **The storage words, dual-use.** ``Future/storageWords`` holds the first continuation while
///   pending, a ``Forever`` future's count, or the result once completed, told apart by the flags.
///   A continuation (``Future/Listener``) is an identifier and a closure: its first word is its
///   object's address (``listenerObjectWord``) and its third word its closure's context
///   (``listenerContextWord``), which the unspecialised deinitialiser reads without the listener's
///   type. ``checked`` verifies this once per process on a listener it makes, before any future is
///   used (every thread's context asks for it).
/// - **The state word.** ``Future/stateWord`` keeps an object's address in its low 48 bits:
///   ``Future/lockedSetSlotObject(_:flag:)`` stops with a message if an address does not fit.
@usableFromInline
enum FutureLayout {
    /// The size of an object's header, before its first stored field: a metadata pointer and a
    /// reference-count word.
    @inlinable static var headerSize: Int { 2 * MemoryLayout<UInt>.size }

    /// Where ``Future/storageWords`` starts, from the object's address.
    @inlinable static var storageOffset: Int { headerSize }

    /// Where ``Future/recipeSlot`` starts, from the object's address: after the storage words.
    @inlinable static var recipeSlotOffset: Int { headerSize + MemoryLayout<FutureStorageWords>.size }

    /// Which word of ``Future/storageWords`` holds a pending future's first continuation's object.
    @inlinable static var listenerObjectWord: Int { 0 }

    /// Which word of ``Future/storageWords`` holds the context of a pending future's first
    /// continuation's closure: the closure's own reference to the continuation's object.
    @inlinable static var listenerContextWord: Int { 2 }

    /// Stops the process if `future`'s fields are not where the offsets above say. Called by every
    /// future's initialiser; free in optimised code when they are.
    @inlinable
    static func checkFieldAddresses<Value>(of future: Future<Value>) {
        let object = Unmanaged.passUnretained(future).toOpaque()
        precondition(
            object + storageOffset == withUnsafeMutablePointer(to: &future.storageWords) { UnsafeMutableRawPointer($0) }
                && object + recipeSlotOffset == withUnsafeMutablePointer(to: &future.recipeSlot) { UnsafeMutableRawPointer($0) },
            "a future's fields are not laid out in the order they are declared (FutureLayout)")
    }

    /// Stops the process if a step of `type` does not fit the recipe slot exactly.
    @inlinable
    static func checkStepFitsRecipeSlot<Input, Output>(_ type: ChainStep<Input, Output>.Type) {
        precondition(
            MemoryLayout<ChainStep<Input, Output>>.size == MemoryLayout<OperationRecipe<Never>?>.size
                && MemoryLayout<ChainStep<Input, Output>>.alignment <= MemoryLayout<OperationRecipe<Never>?>.alignment,
            "a derived future's step does not fit the recipe slot (FutureLayout)")
    }

    /// Checks, once per process, what cannot be checked for free on every future: a continuation's
    /// words. Read by every thread's context when it is made (``ThreadContext/makeCurrent()``).
    @usableFromInline
    static let checked: Void = {
        precondition(
            MemoryLayout<Future<Int>.Listener>.size == MemoryLayout<FutureStorageWords>.size,
            "a continuation does not fill a future's storage words (FutureLayout)")
        final class Probe: Sendable {}
        let probe = Probe()
        let listener = Future<Int>.Listener(id: ObjectIdentifier(probe), receive: { _ in _ = probe })
        let words = withUnsafeBytes(of: listener) { Array($0.bindMemory(to: UInt.self)) }
        let address = UInt(bitPattern: Unmanaged.passUnretained(probe).toOpaque())
        precondition(
            words[listenerObjectWord] == address && words[listenerContextWord] == address,
            "a continuation's object and closure context are not in the words a future reads them from (FutureLayout)")
        withExtendedLifetime(listener) {}
    }()
}
