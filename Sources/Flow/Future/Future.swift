import CFlowSupport
import Synchronization

/// A result that may take time to produce: a value, or an error.
///
/// A future runs its operation once, as soon as it is created, and keeps the result. Callbacks and
/// transforms registered on it run on a ``Scheduler``: by default the one current where they were
/// registered.
///
/// ```swift
/// func fetchUser(id: Int) -> Future<User> {
///     Future { completion in
///         let request = client.get("/users/\(id)") { completion($0) }
///         return Disposer { request.cancel() }   // runs when done or cancelled
///     }
/// }
///
/// fetchUser(id: 42)
///     .map { user in user.name }
///     .onValue { name in print(name) }
///     .onError { error in print("failed: \(error)") }
/// ```
///
/// Thread safety: a future may be completed, observed and cancelled from any thread at once; every
/// callback runs exactly once, and never while a lock is held.
public class Future<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is `storageWords` and the flags and slot of `stateWord`
    // (the `locked*` accessors), guarded by the lock in `stateWord`'s top bit (`lockState()`); the
    // recipe is written once before the future is shared. Values cross threads only by being handed
    // to callbacks on the schedulers that asked for them.

    /// A continuation: which object it is, and how to tell it. The closure is created where the
    /// continuation is added, in inlinable code, so it is specialised for the concrete types; it
    /// captures just the listener object, which Swift uses as the closure's context (no
    /// allocation), and which the closure alone keeps alive: `id` names it without a reference
    /// count of its own.
    @usableFromInline
    struct Listener {
        @usableFromInline let id: ObjectIdentifier
        @usableFromInline let receive: (Result<Value>) -> Void

        @inlinable
        init(id: ObjectIdentifier, receive: @escaping (Result<Value>) -> Void) {
            self.id = id
            self.receive = receive
        }

        /// The listener object, retained: valid while this listener (whose closure owns the
        /// object) exists.
        @inlinable
        func retainedObject() -> AnyObject {
            Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(bitPattern: id))!).takeUnretainedValue()
        }
    }

    // The state. These are stored properties of the class rather than one generic struct: code that is
    // not specialised (deinitialisers, above all) reaches a class's fields through the object's own
    // metadata, while a nested generic struct would need a metadata lookup each time. `final`, or code
    // in other modules would go through dynamically dispatched accessors; exclusivity is the lock's
    // job, so the runtime's dynamic checks are skipped.
    //
    // The order is the layout (``FutureLayout`` states what the code assumes of it and checks it):
    // the object header, the storage (3 words), the recipe (3 words) and the state word, which holds
    // the lock, the flags and the slot object: 72 bytes, an 80-byte malloc chunk. A ``ChainedFuture``
    // adds its upstream and its step scheduler's identity.

    /// Three words that hold, by the flags (``FutureStateBits``): the first continuation while pending
    /// (``lockedFirstListener``); a ``Forever`` future's continuation count; the result once
    /// completed: a value of up to three words in place, a larger one in a ``ResultBox``, an error as
    /// the one word of an `any Error`; a cancelled future's result is a flag alone. Guarded by the lock.
    ///
    /// Not a `Result<Value>?` field: a field whose layout depends on `Value` is destroyed by the
    /// class's unspecialised deinitialiser through the field type's metadata, which it must look up
    /// in the runtime's hash table for every future freed. Destroying a value here needs only
    /// `Value`'s metadata, which the class's own metadata holds, and code outside the class reaches
    /// every field at a fixed offset.
    @usableFromInline @exclusivity(unchecked)
    final var storageWords = FutureStorageWords()

    /// For a future made from an operation: how to run it again (``recipeStorage``). Written once,
    /// before the future is shared. A derived future (``ChainedFuture``), which has no operation,
    /// keeps its step in these 24 bytes instead, and puts `nil` back before it is destroyed.
    ///
    /// Declared without `Value`, whose recipe has the same layout: the unspecialised deinitialisers
    /// (this class's, and a derived future's, which handles the slot itself) then need no metadata
    /// lookup for it, which they would pay for every future freed.
    @usableFromInline @exclusivity(unchecked)
    final var recipeSlot: OperationRecipe<Never>?

    /// The lock (bit 63), the flags (``FutureStateBits``, bits 48 to 62) and the slot object's
    /// address (bits 0 to 47, see ``lockedSlotObject``) in one word rather than three. Objects live below 2⁴⁸ on the 64-bit
    /// platforms Swift runs on (user space has 47 or 48 bits of address unless a program asks the
    /// kernel for more); storing one above stops with a message rather than losing bits.
    ///
    /// The lock is taken with a compare-and-swap from an unlocked value, then a short spin and
    /// yielding while taken: every critical section is a handful of loads and stores and never calls
    /// user code. Only the holder writes the word while it is locked, so its writes are plain stores.
    @usableFromInline
    let stateWord = Atomic<UInt>(0)

    /// The address of ``recipeSlot``, from the object's (``FutureLayout/recipeSlotOffset``). For
    /// reading a derived future's step in place from any thread: taking the field's address with
    /// `withUnsafeMutablePointer` is a modifying access, which ThreadSanitizer reports when two
    /// threads read the step at once.
    @inlinable
    final var recipeSlotAddress: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque() + FutureLayout.recipeSlotOffset
    }

    /// The address of ``storageWords``, from the object's (``FutureLayout/storageOffset``). For
    /// moving a value in where a closure (``withStorageWords(_:)``) could only copy it.
    @inlinable
    final var storageWordsAddress: UnsafeMutableRawPointer {
        Unmanaged.passUnretained(self).toOpaque() + FutureLayout.storageOffset
    }

    /// Word `index` (0 to 2) of ``storageWords``, read by name: no address taken.
    @inlinable @inline(__always)
    final func storageWord(_ index: Int) -> UInt {
        switch index {
        case 0: return storageWords.first
        case 1: return storageWords.second
        default: return storageWords.third
        }
    }

    /// The recipe, with its type.
    @inlinable
    final var recipeStorage: OperationRecipe<Value>? {
        unsafeBitCast(recipeSlot, to: OperationRecipe<Value>?.self)
    }

    /// Stores the recipe of a new future's operation, before the future is shared. Written through
    /// the slot's address with its type: a cast of the value would copy it.
    @inlinable
    final func storeRecipe(_ recipe: consuming OperationRecipe<Value>) {
        recipeSlotAddress.assumingMemoryBound(to: OperationRecipe<Value>?.self).initialize(to: recipe)
    }

    // MARK: The lock

    /// Takes the future's lock: the `locked*` properties may then be read and written.
    @inlinable
    final func lockState() {
        let current = stateWord.load(ordering: .relaxed)
        if current & FutureStateBits.lockBit == 0,
           stateWord.compareExchange(expected: current, desired: current | FutureStateBits.lockBit, ordering: .acquiring).exchanged {
            return
        }
        lockStateContended()
    }

    @usableFromInline
    final func lockStateContended() {
        LockBackoff.acquire {
            let current = stateWord.load(ordering: .relaxed)
            return current & FutureStateBits.lockBit == 0
                && stateWord.compareExchange(
                    expected: current, desired: current | FutureStateBits.lockBit, ordering: .acquiring
                ).exchanged
        }
    }

    /// Releases the lock ``lockState()`` took.
    @inlinable
    final func unlockState() {
        stateWord.store(stateWord.load(ordering: .relaxed) & ~FutureStateBits.lockBit, ordering: .releasing)
    }

    /// Runs `body` under the lock: the `locked*` properties may be read and written inside it.
    @inlinable
    final func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lockState()
        defer { unlockState() }
        return try body()
    }

    /// The flags (``FutureStateBits``). Under the lock.
    @inlinable
    final var lockedState: UInt32 {
        get { UInt32(truncatingIfNeeded: stateWord.load(ordering: .relaxed) >> FutureStateBits.flagsShift) & FutureStateBits.flagsMask }
        set {
            let word = stateWord.load(ordering: .relaxed)
            let kept = word & (FutureStateBits.addressMask | FutureStateBits.lockBit)
            stateWord.store(kept | UInt(newValue & FutureStateBits.flagsMask) << FutureStateBits.flagsShift, ordering: .relaxed)
        }
    }

    /// Sets or clears `flag` in ``lockedState``.
    @inlinable
    final func lockedSetFlag(_ flag: UInt32, _ isSet: Bool) {
        let bit = UInt(flag) << FutureStateBits.flagsShift
        let word = stateWord.load(ordering: .relaxed)
        stateWord.store(isSet ? word | bit : word & ~bit, ordering: .relaxed)
    }

    /// The address of ``storageWords``. Always inlined: in the unspecialised deinitialiser a call
    /// would be a generic one, with runtime type lookups.
    @inlinable @inline(__always)
    final func withStorageWords<R>(_ body: (UnsafeMutableRawPointer) throws -> R) rethrows -> R {
        try withUnsafeMutablePointer(to: &storageWords) { try body(UnsafeMutableRawPointer($0)) }
    }

    // MARK: The slot object

    /// The one object a pending future keeps in the state word, retained: its operation's
    /// disposable (``FutureStateBits/hasDisposable``) or, for a ``ChainedFuture``, the future its
    /// flatMap step returned (``FutureStateBits/hasInner``); nil without either. Under the lock.
    ///
    /// The operation's disposable as one reference (8 bytes where an existential `Disposable` takes
    /// 40): a disposable that is an object (``Disposer``, a bag) as itself; a future's ``disposable``
    /// as that future (``FutureStateBits/disposableCancelsFuture``), so that `return other.disposable`,
    /// the usual way to end an operation that waits on another future, costs no allocation; any other
    /// value in a ``DisposableBox``. An operation returning ``NilDisposer`` stores nothing.
    @inlinable
    final var lockedSlotObject: AnyObject? {
        guard lockedState & FutureStateBits.slotFlags != 0 else { return nil }
        let address = stateWord.load(ordering: .relaxed) & FutureStateBits.addressMask
        return Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue()
    }

    /// Stores `object` as the slot object, with `flag` (``FutureStateBits/hasDisposable`` or
    /// ``FutureStateBits/hasInner``). Under the lock, with no slot object yet.
    @inlinable
    final func lockedSetSlotObject(_ object: AnyObject, flag: UInt32) {
        assert(lockedState & FutureStateBits.slotFlags == 0, "a future's slot was overwritten")
        let address = UInt(bitPattern: Unmanaged.passRetained(object).toOpaque())
        precondition(address & ~FutureStateBits.addressMask == 0, "an object's address is above the 48 bits a future keeps")
        let word = stateWord.load(ordering: .relaxed)
        stateWord.store(word | address | UInt(flag) << FutureStateBits.flagsShift, ordering: .relaxed)
    }

    /// Takes the slot object out (the caller owns the reference), leaving the slot empty.
    @inlinable
    final func lockedTakeSlotObject() -> AnyObject? {
        guard lockedState & FutureStateBits.slotFlags != 0 else { return nil }
        let word = stateWord.load(ordering: .relaxed)
        let cleared = UInt(FutureStateBits.slotFlags | FutureStateBits.disposableCancelsFuture) << FutureStateBits.flagsShift
        stateWord.store(word & ~(FutureStateBits.addressMask | cleared), ordering: .relaxed)
        let address = word & FutureStateBits.addressMask
        return Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeRetainedValue()
    }

    // MARK: Continuations

    /// The first continuation, kept in ``storageWords`` while pending: most futures have exactly
    /// one. With a second one, this is a listener that owns a ``ListenerList`` of all of them
    /// (``FutureStateBits/hasListenerList``): an array field of its own would cost every future 8
    /// bytes for the few that have more. Read in place: a `Listener` (an identifier and a closure,
    /// 24 bytes whatever `Value` is) takes the three words.
    @inlinable
    final var lockedFirstListener: Listener? {
        get {
            guard lockedState & FutureStateBits.hasFirstListener != 0 else { return nil }
            return withStorageWords { $0.assumingMemoryBound(to: Listener.self).pointee }
        }
        set {
            if let newValue {
                if lockedState & FutureStateBits.hasFirstListener != 0 {
                    withStorageWords { $0.assumingMemoryBound(to: Listener.self).pointee = newValue }
                } else {
                    lockedInitializeFirstListener(newValue)
                }
            } else {
                _ = lockedTakeFirstListener()
            }
        }
    }

    /// Moves the first continuation out of ``storageWords``. Under the lock.
    @inlinable
    final func lockedTakeFirstListener() -> Listener? {
        guard lockedState & FutureStateBits.hasFirstListener != 0 else { return nil }
        lockedSetFlag(FutureStateBits.hasFirstListener, false)
        return withStorageWords { $0.assumingMemoryBound(to: Listener.self).move() }
    }

    /// The identifier of the first continuation (the first word of the `Listener` in
    /// ``storageWords``), read without the `Listener`'s type: usable in the unspecialised
    /// deinitialiser without a metadata lookup.
    @inlinable
    final var lockedFirstListenerID: ObjectIdentifier? {
        guard lockedState & FutureStateBits.hasFirstListener != 0 else { return nil }
        return ObjectIdentifier(
            Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: storageWord(FutureLayout.listenerObjectWord))!)
                .takeUnretainedValue())
    }

    // MARK: Flags

    /// Whether the future has its result (possibly ``FutureStateBits/isAborted``, not stored).
    @inlinable
    final var lockedIsCompleted: Bool {
        lockedState & FutureStateBits.isCompleted != 0
    }

    /// Whether the slot holds the operation's ``Disposable`` (only while pending).
    @inlinable
    final var lockedHasDisposable: Bool {
        lockedState & FutureStateBits.hasDisposable != 0
    }

    /// Whether ``lockedFirstListener`` stands for a ``ListenerList``.
    @inlinable
    final var lockedHasListenerList: Bool {
        get { lockedState & FutureStateBits.hasListenerList != 0 }
        set { lockedSetFlag(FutureStateBits.hasListenerList, newValue) }
    }

    /// For a pending ``Forever`` future, the number of its continuations, which it counts instead of
    /// holding (it never delivers a result, so holding them would keep them alive in a cycle for
    /// good), kept in ``storageWords``; -1 for every other future.
    @inlinable
    final var lockedForeverObserverCount: Int32 {
        get {
            guard lockedState & FutureStateBits.isForever != 0 else { return -1 }
            return Int32(truncatingIfNeeded: storageWords.first)
        }
        set {
            guard newValue >= 0 else {
                lockedSetFlag(FutureStateBits.isForever, false)
                storageWords.first = 0
                return
            }
            assert(lockedState & FutureStateBits.hasFirstListener == 0, "a never-completing future holds a continuation")
            storageWords.first = UInt(newValue)
            lockedSetFlag(FutureStateBits.isForever, true)
        }
    }

    /// Whether this is a ``Forever`` future.
    @inlinable
    final var lockedIsForever: Bool { lockedState & FutureStateBits.isForever != 0 }

    @inlinable
    final var lockedHasListeners: Bool {
        lockedState & FutureStateBits.hasFirstListener != 0 || lockedForeverObserverCount > 0
    }

    // MARK: The result

    /// The result, if the future has completed. Read under the lock.
    @inlinable
    final var lockedResult: Result<Value>? {
        let state = lockedState
        guard state & FutureStateBits.isCompleted != 0 else { return nil }
        if state & FutureStateBits.isAborted != 0 { return .failure(FutureError.aborted) }
        return withStorageWords { words in
            if state & FutureStateBits.isFailure != 0 {
                return .failure(words.assumingMemoryBound(to: (any Error).self).pointee)
            }
            if FutureStorageWords.holdsInPlace(Value.self) {
                return .success(words.assumingMemoryBound(to: Value.self).pointee)
            }
            return .success(unsafeDowncast(words.assumingMemoryBound(to: AnyObject.self).pointee, to: ResultBox<Value>.self).value)
        }
    }

    /// Records `result` as the future's result. Under the lock, once, when the storage is empty: the
    /// first continuation, if any, was taken out.
    @inlinable
    final func lockedSetResult(_ result: Result<Value>) {
        assert(lockedState & FutureStateBits.hasFirstListener == 0, "a future's result was stored over a continuation")
        withStorageWords { words in
            switch result {
            case .success(let value):
                if FutureStorageWords.holdsInPlace(Value.self) {
                    words.initializeMemory(as: Value.self, to: value)
                } else {
                    words.initializeMemory(as: AnyObject.self, to: ResultBox(value))
                }
            case .failure(let error):
                words.initializeMemory(as: (any Error).self, to: error)
                lockedSetFlag(FutureStateBits.isFailure, true)
            }
        }
        lockedSetFlag(FutureStateBits.isCompleted, true)
    }

    /// Completes the future with ``FutureError/aborted`` without storing it
    /// (``FutureStateBits/isAborted``): the slot keeps a flatMap's inner future, which cancelling
    /// goes on to, and cancelling writes nothing. Under the lock, with no continuation and no
    /// disposable.
    @inlinable
    final func lockedSetAborted() {
        lockedState |= FutureStateBits.isCompleted | FutureStateBits.isAborted
    }

    /// Destroys the stored result, if any: for the deinitialiser, where `Value`'s metadata comes from
    /// the class's own.
    @inline(__always)
    final func destroyStoredResult() {
        let state = lockedState
        guard state & FutureStateBits.isCompleted != 0, state & FutureStateBits.isAborted == 0 else { return }
        withStorageWords { words in
            if state & FutureStateBits.isFailure != 0 {
                _ = words.assumingMemoryBound(to: (any Error).self).deinitialize(count: 1)
            } else if FutureStorageWords.holdsInPlace(Value.self) {
                _ = words.assumingMemoryBound(to: Value.self).deinitialize(count: 1)
            } else {
                _ = words.assumingMemoryBound(to: AnyObject.self).deinitialize(count: 1)
            }
        }
    }

    /// Moves the operation's disposable out of the slot. Under the lock, when
    /// ``lockedHasDisposable``.
    @usableFromInline
    final func lockedTakeDisposable() -> Disposable {
        let cancelsFuture = lockedState & FutureStateBits.disposableCancelsFuture != 0
        let object = lockedTakeSlotObject()!
        if cancelsFuture { return Future.cancellation(of: object) }
        // Only disposables are stored otherwise: the cast cannot fail.
        return object as! Disposable
    }
    #if DEBUG
    @usableFromInline let creationFile: StaticString
    @usableFromInline let creationLine: UInt
    @usableFromInline let liveCountScope: LiveFutureCount?

    /// Where this future was created, for descriptions and abandonment errors.
    var creationSite: String { "\(creationFile):\(creationLine)" }

    /// Whether releasing this future's completion callback uncalled is reported (see
    /// `AbandonmentReport`): not for the library's operations that complete only through a future they
    /// observe, which can be abandoned only because that future never completes. Written before the
    /// operation first runs.
    final var reportsAbandonment = true
    #endif

    /// Creates a future holding `result`, or a pending one when `result` is `nil`.
    @inlinable
    init(initialResult result: Result<Value>?, file: StaticString, line: UInt, countedLike relative: LiveFutureCount? = nil) {
        #if DEBUG
        creationFile = file
        creationLine = line
        liveCountScope = LiveFutureCount.current ?? relative
        liveCountScope?.increment()
        #endif
        FutureLayout.checkFieldAddresses(of: self)
        if let result {
            // Not yet shared: the lock is not needed, and the flags are plain stores.
            lockedSetResult(result)
        }
    }

    /// The live-future counter this future is counted by (debug builds), for futures derived from it.
    @usableFromInline
    var liveCount: LiveFutureCount? {
        #if DEBUG
        return liveCountScope
        #else
        return nil
        #endif
    }

    deinit {
        #if DEBUG
        liveCountScope?.decrement()
        #endif
        // Nothing else references this future now, so its state needs no lock.
        let state = lockedState
        guard state & (FutureStateBits.hasFirstListener | FutureStateBits.slotFlags) != 0 else {
            // The usual case: a completed future, or a pending one that holds nothing.
            if state & FutureStateBits.isCompleted != 0 { destroyStoredResult() }
            return
        }
        // A pending future dropped with its continuations releases them without recursing down a
        // long chain (see `ThreadContext.pendingReleases`), and so its slot object (a flatMap's inner
        // future may be the next link of a chain). Each listener's object goes to the release queue,
        // then the listener (whose closure holds the other reference) is dropped, leaving the queue
        // the last owner. The object is read from the listener's first word by address: a static
        // member of `Future` would fetch `Future<Value>`'s metadata in this unspecialised code.
        let context = ThreadContext.current
        if state & FutureStateBits.hasFirstListener != 0 {
            let objectAddress = UnsafeRawPointer(bitPattern: storageWord(FutureLayout.listenerObjectWord))!
            let object = Unmanaged<AnyObject>.fromOpaque(objectAddress).takeUnretainedValue()
            if lockedHasListenerList {
                for listener in unsafeDowncast(object, to: ListenerList<Value>.self).listeners {
                    context.pendingReleases.append(listener.retainedObject())
                }
            } else {
                context.pendingReleases.append(object)
            }
            // Drops the listener: its closure's context is its one reference (the identifier holds
            // none). Released by address, since the `Listener`'s type would need a metadata lookup in
            // this unspecialised code (see ``FutureLayout``).
            if let closureContext = UnsafeRawPointer(bitPattern: storageWord(FutureLayout.listenerContextWord)) {
                Unmanaged<AnyObject>.fromOpaque(closureContext).release()
            }
            lockedSetFlag(FutureStateBits.hasFirstListener, false)
        }
        if let object = lockedTakeSlotObject() {
            context.pendingReleases.append(object)
        }
        // A cancelled future may still hold a flatMap's inner future (taken above); its result is a
        // flag. Any other completed future holds neither.
        destroyStoredResult()
        context.drainPendingReleases()
    }

    // MARK: Completion

    /// Completes the future with `result` unless it already completed. Disposes the operation, then
    /// notifies the continuations in the order they were added.
    ///
    /// - Returns: whether this call completed the future.
    @inlinable
    @discardableResult
    final func complete(with result: Result<Value>) -> Bool {
        lockState()
        guard !lockedIsCompleted else {
            unlockState()
            return false
        }
        // Kept out of this path, which most futures take: an existential local costs runtime calls.
        if lockedHasDisposable { return lockedCompleteDisposing(with: result) }
        let listener = lockedTakeFirstListener()
        lockedSetResult(result)
        unlockState()
        if let listener {
            Future.notify(listener, of: result)
        }
        return true
    }

    /// ``complete(with:)`` for a future holding its operation's disposable: called with the lock
    /// held; unlocks, disposes the operation, then notifies the continuations.
    @inlinable @inline(never)
    final func lockedCompleteDisposing(with result: Result<Value>) -> Bool {
        let disposable = lockedTakeDisposable()
        let listener = lockedTakeFirstListener()
        lockedSetResult(result)
        unlockState()
        disposable.dispose()
        if let listener {
            Future.notify(listener, of: result)
        }
        return true
    }

    /// Hands `result` to the continuations inside an immediate-execution frame, so that a chain of
    /// completions triggering completions goes to the thread's trampoline instead of the stack.
    /// `listener` is the first continuation, or the one that tells a ``ListenerList`` in order.
    @inlinable
    static func notify(_ listener: Listener, of result: Result<Value>) {
        let context = ThreadContext.current
        guard context.enterImmediateFrame() else {
            context.deferredWork.append { listener.receive(result) }
            return
        }
        listener.receive(result)
        context.exitImmediateFrame()
    }

    /// The objects of every continuation, retained, in the order they were added. Under the lock, or
    /// in the deinitialiser.
    final func lockedListenerObjects() -> [AnyObject] {
        guard let first = lockedFirstListenerID else { return [] }
        let object = Future.object(named: first)
        guard lockedHasListenerList else { return [object] }
        return unsafeDowncast(object, to: ListenerList<Value>.self).listeners.map { $0.retainedObject() }
    }

    /// The object `id` names, retained: valid while a listener that owns the object exists.
    @inlinable
    static func object(named id: ObjectIdentifier) -> AnyObject {
        Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(bitPattern: id))!).takeUnretainedValue()
    }

    /// Adds a continuation, or hands it the result at once if the future already completed.
    @inlinable
    final func addListener<L: FutureListener>(_ listener: L) where L.Input == Value {
        if addListener(Listener(id: ObjectIdentifier(listener), receive: { listener.futureDidComplete($0) })) {
            Future.listenerOfForeverAdded(listener)
        }
    }

    /// Adds a continuation, or hands it the result at once if the future already completed.
    ///
    /// - Returns: whether this is a ``Forever`` future, which counts the continuation instead of
    ///   holding it: the caller then makes a continuation that completes only through this future a
    ///   ``Forever`` future too (see ``listenerOfForeverAdded(_:)``).
    @inlinable
    @discardableResult
    final func addListener(_ listener: consuming Listener) -> Bool {
        lockState()
        if let completed = lockedResult {
            unlockState()
            Future.notify(listener, of: completed)
            return false
        }
        if lockedIsForever {
            lockedForeverObserverCount += 1
            unlockState()
            return true
        } else if let first = lockedFirstListenerID {
            if lockedHasListenerList {
                unsafeDowncast(Future.object(named: first), to: ListenerList<Value>.self).listeners.append(listener)
            } else {
                lockedFirstListener = ListenerList.listener(holding: [lockedTakeFirstListener()!, listener])
                lockedHasListenerList = true
            }
        } else {
            lockedInitializeFirstListener(listener)
        }
        unlockState()
        return false
    }

    /// Stores `listener` as the first continuation of a future that has none, moving it in: the
    /// ``lockedFirstListener`` setter's copy retains and releases its object. Under the lock.
    @inlinable
    final func lockedInitializeFirstListener(_ listener: consuming Listener) {
        assert(lockedState & (FutureStateBits.hasFirstListener | FutureStateBits.isCompleted | FutureStateBits.isForever) == 0,
               "a continuation was stored over another, a future's result or its count")
        storageWordsAddress.initializeMemory(as: Listener.self, to: listener)
        lockedSetFlag(FutureStateBits.hasFirstListener, true)
    }

    /// `listener` was just added to a ``Forever`` future, which does not hold it. If it completes only
    /// through that future, it becomes a ``Forever`` future as well: else it and its own continuations,
    /// which refer to it, would keep each other alive for good once the caller lets go.
    @usableFromInline
    static func listenerOfForeverAdded(_ listener: AnyObject) {
        (listener as? any CompletesOnlyThroughWhatItListensTo)?.becomeForever()
    }

    /// Makes a pending future whose operation can no longer complete it (its completion callback was
    /// released uncalled) a ``Forever`` future: it counts its continuations instead of holding them,
    /// since it will never deliver a result, so that a chain nobody holds any more is freed rather
    /// than kept alive in cycles. The continuations that can only complete through it (derived
    /// futures, repetitions) become ``Forever`` futures in turn. All can still be cancelled.
    @usableFromInline
    final func becomeForever() {
        var pending: [any ForeverConvertible] = [self]
        var released: [AnyObject] = []
        while let future = pending.popLast() {
            for listener in future.becomeForeverTakingListeners() {
                if let follower = listener as? any CompletesOnlyThroughWhatItListensTo {
                    pending.append(follower)
                }
                released.append(listener)
            }
        }
        guard !released.isEmpty else { return }
        // Released without recursing down a long chain, as in `deinit`.
        let context = ThreadContext.current
        context.pendingReleases.append(contentsOf: released)
        released = []
        context.drainPendingReleases()
    }

    /// Stores the disposable of the operation, or disposes it now if the future already completed.
    @inlinable
    final func setDisposable(_ disposable: Disposable) {
        // Operations with nothing to clean up are common: a `NilDisposer` is not worth storing (a
        // metatype comparison, not a cast).
        if type(of: disposable) == NilDisposer.self { return }
        let (object, cancelsFuture) = Future.storable(disposable)
        lockState()
        guard !lockedIsCompleted else {
            unlockState()
            disposable.dispose()
            return
        }
        lockedSetSlotObject(object, flag: FutureStateBits.hasDisposable)
        if cancelsFuture { lockedSetFlag(FutureStateBits.disposableCancelsFuture, true) }
        unlockState()
    }

    /// The result, if the future has completed.
    @inlinable
    public final var result: Result<Value>? {
        lockState()
        defer { unlockState() }
        return lockedResult
    }

    /// Whether the future has completed (with a value, an error or by cancellation).
    @inlinable
    public final var isCompleted: Bool {
        lockState()
        defer { unlockState() }
        return lockedIsCompleted
    }

    // MARK: Cancellation

    /// Cancels the future: it completes with ``FutureError/aborted`` and its operation is disposed.
    ///
    /// Ignored once the future has completed or has continuations (others rely on its result). When
    /// the last continuation of a pending future is cancelled, that future is cancelled in turn, and
    /// so on upstream; an upstream future that still has other continuations survives.
    ///
    /// ```swift
    /// let image = download(url).map(decode)
    /// image.cancel()   // cancels the decode step, then the download (nobody else uses it)
    /// ```
    ///
    /// In debug builds, a cancel ignored because the future has continuations is reported through
    /// ``FlowDiagnostics``, naming the caller's `file` and `line`.
    public final func cancel(file: StaticString = #fileID, line: UInt = #line) {
        guard cancelIfUnobserved() else { return reportIgnoredCancel(file: file, line: line) }
        Future.cancelUpstream(of: self)
    }

    /// Detaches `cancelled` (just cancelled) from what it waits on, cancelling each upstream future
    /// left unobserved, and so on up; then runs their cancellation callbacks, upstream ones first and
    /// `cancelled`'s last, the order in which Flow disposes a chain. Iterative: a cancelled
    /// million-step chain must not recurse.
    static func cancelUpstream(of cancelled: any CancellableUpstream) {
        // Listeners are named by identity: holding them here would keep them alive.
        var pending = cancelled.upstreamLinks()
        // Every future here is found after the one that listened to it, so the reverse order puts
        // each future's callbacks before those of its continuations. Only futures with something to
        // do on cancellation are kept: most steps of a long chain have none.
        var cancelledUpstream: [any CancellableUpstream] = []
        while let (upstream, listener) = pending.popLast() {
            if upstream.removeListenerAndCancelIfUnobserved(listener) {
                if upstream.hasCancellationWork { cancelledUpstream.append(upstream) }
                pending.append(contentsOf: upstream.upstreamLinks())
            }
        }
        for upstream in cancelledUpstream.reversed() { upstream.didCancel() }
        cancelled.didCancel()
    }

    /// Completes with ``FutureError/aborted`` if pending with no continuation.
    ///
    /// - Returns: whether the future was cancelled.
    final func cancelIfUnobserved() -> Bool {
        var disposable: Disposable?
        let isCancelled = withLock { () -> Bool in
            guard !lockedIsCompleted, !lockedHasListeners else { return false }
            if lockedHasDisposable { disposable = lockedTakeDisposable() }
            lockedSetAborted()
            return true
        }
        guard isCancelled else { return false }
        disposable?.dispose()
        return true
    }

    /// Called once after this future was cancelled by ``cancel()`` (directly or from downstream), by
    /// ``cancelUpstream(of:)`` once the futures upstream of it were cancelled.
    func didCancel() {}

    /// Whether ``didCancel()`` does anything for this future.
    var hasCancellationWork: Bool { false }

    /// The futures this one waits on and the listener it registered on each, for cancellation.
    func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)] { [] }

    /// A ``Disposable`` that cancels this future when disposed (and does nothing when released).
    ///
    /// ```swift
    /// bag += image(at: url).disposable
    /// ```
    public final var disposable: Disposable { FutureCancellation(future: self) }

    /// `disposable` as the one reference ``lockedSlotObject`` holds, and whether that reference is a
    /// future that disposing cancels.
    @usableFromInline
    static func storable(_ disposable: Disposable) -> (AnyObject, cancelsFuture: Bool) {
        if let cancellation = disposable as? FutureCancellation { return (cancellation.future, true) }
        if type(of: disposable) is AnyObject.Type { return (disposable as AnyObject, false) }
        return (boxed(disposable), false)
    }

    private static func boxed<D: Disposable>(_ disposable: D) -> AnyObject {
        DisposableBox(disposable)
    }

    /// The disposable that cancels `future`, stored by ``storable(_:)``.
    @usableFromInline
    static func cancellation(of future: AnyObject) -> Disposable {
        // Only futures are stored with `disposableCancelsFuture`: the cast cannot fail.
        FutureCancellation(future: future as! any CancellableFuture)
    }

    // MARK: Repetition

    /// A new future that runs this future's operation (and those of the futures it derives from)
    /// again. A future with nothing to re-run (a completed value) returns itself; a ``Forever`` future
    /// gives a new one, which a cancellation of this one does not end.
    func makeFresh() -> Future<Value> {
        guard let recipe = recipeStorage else {
            guard withLock({ lockedIsForever }) else { return self }
            #if DEBUG
            return Future(.forever, file: creationFile, line: creationLine)
            #else
            return Future(.forever)
            #endif
        }
        // A repetition is the same operation: in debug builds it names the original's creation site.
        #if DEBUG
        let fresh = Future(initialResult: nil, file: creationFile, line: creationLine, countedLike: liveCount)
        fresh.reportsAbandonment = reportsAbandonment
        #else
        let fresh = Future(initialResult: nil, file: "(repetition)", line: 0, countedLike: liveCount)
        #endif
        fresh.storeRecipe(recipe)
        OperationRunner.start(fresh, recipe, isRepetition: true)
        return fresh
    }
}

/// A future that can be made a ``Forever`` future once what it waits on can never complete.
protocol ForeverConvertible: AnyObject {
    /// If pending and not yet ``Forever``, becomes one and returns its continuations' objects, which
    /// it no longer holds; else returns nothing.
    func becomeForeverTakingListeners() -> [AnyObject]
    /// Becomes a ``Forever`` future if pending, and so do the continuations that complete only
    /// through it.
    func becomeForever()
}

/// A future that completes only when a future it listens to completes: when that one can never
/// complete, neither can this one.
protocol CompletesOnlyThroughWhatItListensTo: ForeverConvertible {}

extension Future: ForeverConvertible {
    final func becomeForeverTakingListeners() -> [AnyObject] {
        lockState()
        guard !lockedIsCompleted, !lockedIsForever else {
            unlockState()
            return []
        }
        let objects = lockedListenerObjects()
        lockedFirstListener = nil
        lockedHasListenerList = false
        lockedForeverObserverCount = Int32(objects.count)
        unlockState()
        return objects
    }
}

extension Future: CancellableUpstream {
    final func removeListenerAndCancelIfUnobserved(_ listener: ObjectIdentifier) -> Bool {
        removeListener(listener) && cancelIfUnobserved()
    }

    /// Removes a continuation (it will not be told the result).
    ///
    /// - Returns: whether the future is now pending with no continuation.
    @discardableResult
    final func removeListener(_ listener: ObjectIdentifier) -> Bool {
        withLock { () -> Bool in
            guard !lockedIsCompleted else { return false }
            if lockedIsForever {
                lockedForeverObserverCount -= 1
            } else if let first = lockedFirstListenerID {
                if !lockedHasListenerList {
                    if first == listener { lockedFirstListener = nil }
                } else {
                    let list = unsafeDowncast(Future.object(named: first), to: ListenerList<Value>.self)
                    if let index = list.listeners.firstIndex(where: { $0.id == listener }) {
                        list.listeners.remove(at: index)
                    }
                    if list.listeners.count == 1 {
                        // Back to one continuation, stored inline.
                        lockedFirstListener = list.listeners[0]
                        lockedHasListenerList = false
                    }
                }
            }
            return !lockedHasListeners
        }
    }
}

extension Future: CustomStringConvertible {
    /// The future's state: its result, or pending (with its creation site in debug builds).
    public var description: String {
        let state: String
        if let result {
            state = "\(result)"
        } else {
            state = "pending"
        }
        #if DEBUG
        return "Future<\(Value.self)>(\(state), created at \(creationSite))"
        #else
        return "Future<\(Value.self)>(\(state))"
        #endif
    }
}

/// A continuation of a future: told the result once, on the completing thread. Added with
/// `addListener(_:)`, which calls it directly (no dynamic dispatch once specialised).
@usableFromInline
protocol FutureListener<Input>: AnyObject {
    associatedtype Input
    func futureDidComplete(_ result: Result<Input>)
}

/// A future seen from a continuation that is being cancelled.
protocol CancellableUpstream: AnyObject {
    /// Removes `listener`; if that leaves this future pending with no continuation, cancels it.
    ///
    /// - Returns: whether this future was cancelled.
    func removeListenerAndCancelIfUnobserved(_ listener: ObjectIdentifier) -> Bool
    func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)]
    /// Runs what must happen once this future was cancelled (its `onCancel` callbacks).
    func didCancel()
    /// Whether ``didCancel()`` does anything.
    var hasCancellationWork: Bool { get }
}

/// The disposable of ``Future/disposable``.
private struct FutureCancellation: Disposable {
    let future: any CancellableFuture
    // Disposing (a bag, a future's `disposable`) is not a call that could be ignored by mistake: it
    // cancels without the ignored-cancel report.
    func dispose() { future.cancelQuietly() }
}

/// A future of any value type, seen by ``FutureCancellation``.
protocol CancellableFuture: AnyObject, Sendable {
    func cancelQuietly()
}

extension Future: CancellableFuture {}

extension DisposeBag {
    /// Adds `future` to `bag`: disposing the bag cancels the future.
    public static func += <Value>(bag: DisposeBag, future: Future<Value>) {
        bag.add(future.disposable)
    }
}

/// The bits of ``Future/lockedState``.
@usableFromInline
enum FutureStateBits {
    /// The future holds its result.
    @inlinable static var isCompleted: UInt32 { 1 }
    /// The future holds its operation's disposable.
    @inlinable static var hasDisposable: UInt32 { 2 }
    /// The future is a ``Forever`` future: it counts its continuations in the bits above the flags.
    @inlinable static var isForever: UInt32 { 4 }
    /// The first-listener slot stands for a ``ListenerList``.
    @inlinable static var hasListenerList: UInt32 { 8 }
    /// The storage holds the first continuation (only while pending).
    @inlinable static var hasFirstListener: UInt32 { 16 }
    /// The disposable is a future, which disposing it cancels (a ``Future/disposable``).
    @inlinable static var disposableCancelsFuture: UInt32 { 32 }
    /// The slot holds the future a ``ChainedFuture``'s flatMap step returned.
    @inlinable static var hasInner: UInt32 { 64 }
    /// The future was cancelled: its result is ``FutureError/aborted``, not stored.
    @inlinable static var isAborted: UInt32 { 128 }
    /// The flags that say the slot holds an object.
    @inlinable static var slotFlags: UInt32 { hasDisposable | hasInner }
    /// The result is an error (``Future/storageWords`` holds an `any Error`).
    @inlinable static var isFailure: UInt32 { 256 }
    @inlinable static var flagsMask: UInt32 { 0x7FFF }
    /// Where the flags start in ``Future/stateWord``.
    @inlinable static var flagsShift: UInt { 48 }
    /// The bits of ``Future/stateWord`` that hold the slot object's address.
    @inlinable static var addressMask: UInt { (1 << 48) - 1 }
    /// The lock's bit in ``Future/stateWord``.
    @inlinable static var lockBit: UInt { 1 << 63 }
}

/// The three words of a future's ``Future/storageWords``: a struct rather than a tuple, whose
/// metadata the runtime would look up where the code is not specialised.
@usableFromInline
struct FutureStorageWords {
    @usableFromInline var first: UInt = 0
    @usableFromInline var second: UInt = 0
    @usableFromInline var third: UInt = 0

    @inlinable
    init() {}

    /// Whether a successful value of type `type` is kept in the three words rather than in a
    /// ``ResultBox``: up to three words, aligned to at most a word. Known where the code is
    /// specialised; read from the value's metadata, which the class's holds, where it is not. A
    /// function of a non-generic type: a static property of `Future` would make the unspecialised
    /// deinitialiser fetch `Future<Value>`'s metadata through the runtime's cache.
    @inlinable @inline(__always)
    static func holdsInPlace<Value>(_ type: Value.Type) -> Bool {
        MemoryLayout<Value>.size <= 3 * MemoryLayout<UInt>.size && MemoryLayout<Value>.alignment <= MemoryLayout<UInt>.alignment
    }
}

/// A successful value too large for a future's ``Future/storageWords``, kept out of line.
@usableFromInline
final class ResultBox<Value>: @unchecked Sendable {
    // @unchecked Sendable: immutable; the value crosses threads as a future's result does.
    @usableFromInline let value: Value

    @inlinable
    init(_ value: Value) {
        self.value = value
    }
}

/// The continuations of a future that has more than one, in the order they were added. The future's
/// first-listener slot then holds a listener whose closure owns this list and tells every continuation
/// in turn, and whose identifier is the list's. Mutated only under the future's lock.
@usableFromInline
final class ListenerList<Value: Sendable> {
    @usableFromInline var listeners: [Future<Value>.Listener]

    @inlinable
    init(_ listeners: [Future<Value>.Listener]) {
        self.listeners = listeners
    }

    /// The listener standing for a new list of `listeners`.
    @inlinable
    static func listener(holding listeners: [Future<Value>.Listener]) -> Future<Value>.Listener {
        let list = ListenerList(listeners)
        return Future<Value>.Listener(id: ObjectIdentifier(list), receive: { result in
            for listener in list.listeners { listener.receive(result) }
        })
    }

    /// The list that `listener` (made by ``listener(holding:)``) stands for.
    @inlinable
    static func of(_ listener: Future<Value>.Listener) -> ListenerList {
        unsafeDowncast(listener.retainedObject(), to: ListenerList.self)
    }
}

/// A disposable that is not an object, boxed so that a future holds its operation's disposable in
/// one reference (see ``Future/lockedSlotObject``). Generic, so that the box holds the value itself
/// (a 32-byte chunk for a value of up to 16 bytes) rather than a 40-byte existential.
final class DisposableBox<Boxed: Disposable>: Disposable {
    let boxed: Boxed

    init(_ boxed: Boxed) {
        self.boxed = boxed
    }

    func dispose() { boxed.dispose() }
}
