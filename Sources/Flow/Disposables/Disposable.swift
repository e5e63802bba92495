import Synchronization

/// Something that can be cleaned up: a pending operation to cancel, a timer to stop, a resource to
/// release.
///
/// ```swift
/// let bag = DisposeBag()
/// bag += Disposer { print("cleaned up") }
/// bag.dispose()  // prints "cleaned up"
/// ```
public protocol Disposable: Sendable {
    /// Releases what this disposable stands for. Calling it more than once has no further effect.
    func dispose()
}

/// A ``Disposable`` that does nothing: for operations with nothing to clean up.
public struct NilDisposer: Disposable {
    /// Creates a disposable that does nothing.
    public init() {}

    /// Does nothing.
    public func dispose() {}
}

/// A ``Disposable`` that runs a closure once: on the first ``dispose()`` or, if never disposed,
/// when it is deinitialised. Safe to dispose from several threads at once.
///
/// ```swift
/// return Disposer { task.cancel() }
/// ```
public final class Disposer: Disposable {
    // Guarded by the lock: the closure is taken out exactly once, then run outside the lock.
    private let body: Locked<(@Sendable () -> Void)?>

    /// Creates a disposer that runs `body` once when disposed or deinitialised.
    @preconcurrency
    public init(_ body: @escaping @Sendable () -> Void = {}) {
        self.body = Locked(body)
    }

    /// Runs the closure if it has not run yet.
    public func dispose() {
        let pending = body.withLock { body in
            let taken = body
            body = nil
            return taken
        }
        pending?()
    }

    /// Releases the closure without running it (the deinitialiser will not run it either).
    public func cancel() {
        let released = body.withLock { body in
            let taken = body
            body = nil
            return taken
        }
        _ = released
    }

    /// Whether the closure has run (or been released).
    public var isDisposed: Bool { body.withLock { $0 == nil } }

    deinit {
        dispose()
    }
}

/// A collection of disposables disposed together: on ``dispose()`` or when the bag is deinitialised.
///
/// As in Flow, ``dispose()`` empties the bag and the bag stays usable: what is added afterwards is
/// kept until the next ``dispose()`` (or the bag's end). Code that rebuilds its listeners disposes
/// the old round and adds the new one to the same bag.
///
/// ```swift
/// let bag = DisposeBag()
/// bag += timer
/// bag += { print("bag disposed") }
/// bag += future          // cancels the future when the bag is disposed
/// bag.dispose()
/// ```
public final class DisposeBag: Disposable {
    // Guarded by the lock; disposables are always disposed after it is released.
    private let state = Locked([Disposable]())

    /// Creates an empty bag.
    public init() {}

    /// Creates a bag holding `disposables`.
    public init(_ disposables: Disposable...) {
        state.withLock { $0 = disposables }
    }

    /// Creates a bag holding the disposables of a sequence (an array, as Flow code passes).
    ///
    /// ```swift
    /// let bag = DisposeBag([timer, observation])
    /// ```
    public init<S: Sequence>(_ disposables: S) where S.Element == Disposable {
        let collected = Array(disposables)
        state.withLock { $0 = collected }
    }

    /// Creates a bag holding the disposables of an array (an array literal included).
    ///
    /// ```swift
    /// let bag = DisposeBag([Disposer { print("one") }, Disposer { print("two") }])
    /// ```
    public init(_ disposables: [Disposable]) {
        state.withLock { $0 = disposables }
    }

    /// Creates a bag holding `disposables`.
    public init(disposing disposables: [Disposable]) {
        state.withLock { $0 = disposables }
    }

    /// Adds `disposable`, disposed with the bag's next ``dispose()`` (or when the bag ends).
    public func add(_ disposable: Disposable) {
        state.withLock { $0.append(disposable) }
    }

    /// Whether the bag holds nothing: never filled, or nothing added since the last ``dispose()``.
    public var isEmpty: Bool { state.withLock { $0.isEmpty } }

    /// Creates a bag held by this one: disposing this bag disposes the inner bag too.
    ///
    /// - Returns: the inner bag, for work whose lifetime is shorter than this bag's.
    public func innerBag() -> DisposeBag {
        let inner = DisposeBag()
        add(inner)
        return inner
    }

    /// Keeps `objects` alive until the bag is disposed.
    ///
    /// ```swift
    /// bag.hold(delegate)
    /// ```
    public func hold(_ objects: AnyObject...) {
        for object in objects { add(HeldObject(object)) }
    }

    /// Disposes everything in the bag, in the order added, and empties it; the bag stays usable.
    public func dispose() {
        let disposables = state.withLock { disposables -> [Disposable] in
            let taken = disposables
            disposables = []
            return taken
        }
        for disposable in disposables {
            disposable.dispose()
        }
    }

    deinit {
        dispose()
    }
}

extension DisposeBag {
    /// Adds `disposable` to `bag`.
    public static func += (bag: DisposeBag, disposable: Disposable) {
        bag.add(disposable)
    }

    /// Adds a closure to `bag`, run once when the bag is disposed.
    @preconcurrency
    public static func += (bag: DisposeBag, body: @escaping @Sendable () -> Void) {
        bag.add(Disposer(body))
    }

    /// Adds `disposable` to `bag` when there is one.
    public static func += (bag: DisposeBag, disposable: Disposable?) {
        if let disposable { bag.add(disposable) }
    }
}

/// Work that runs at most once: when ``run()`` is called, unless ``dispose()`` was called first. Unlike
/// ``Disposer`` it does nothing when released, so a caller may drop it without cancelling the work.
final class CancellableWork: Disposable {
    // Guarded by the lock: whichever of run() and dispose() comes first takes the closure.
    private let work: Locked<(@Sendable () -> Void)?>

    init(_ work: @escaping @Sendable () -> Void) { self.work = Locked(work) }

    func run() {
        take()?()
    }

    func dispose() {
        _ = take()
    }

    private func take() -> (@Sendable () -> Void)? {
        work.withLock { work in
            let taken = work
            work = nil
            return taken
        }
    }
}

/// Keeps an object alive until disposed.
private final class HeldObject: Disposable, Sendable {
    private struct Reference: @unchecked Sendable {
        // @unchecked Sendable: `object` is never read or called, only released, under the lock of
        // `reference`.
        let object: AnyObject
    }

    private let reference: Locked<Reference?>

    init(_ object: AnyObject) { reference = Locked(Reference(object: object)) }

    func dispose() {
        let released = reference.withLock { reference in
            let taken = reference
            reference = nil
            return taken
        }
        _ = released
    }
}

/// Adds `disposable` to `bag` if there is a bag: Flow's operator for optional bags.
///
/// ```swift
/// weak var bag: DisposeBag?
/// bag += timer
/// ```
public func += (bag: DisposeBag?, disposable: Disposable?) {
    guard let disposable else { return }
    bag?.add(disposable)
}

/// Adds a ``Disposer`` running `body` to `bag` if there is a bag.
@preconcurrency
public func += (bag: DisposeBag?, body: @escaping @Sendable () -> Void) {
    bag?.add(Disposer(body))
}

extension Disposable {
    /// Disposes this `timeout` seconds from now, or when the returned future is cancelled.
    ///
    /// ```swift
    /// banner.show().dispose(after: 3)
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: where `dispose()` is called.
    ///   - timeout: seconds to wait, on the timer of the scheduler current here.
    /// - Returns: a future completing once the time is up (this is then disposed).
    @discardableResult
    public func dispose(on scheduler: Scheduler = .current, after timeout: Double) -> Future<Void> {
        Future().delay(by: timeout).always(on: scheduler) { self.dispose() }
    }
}
