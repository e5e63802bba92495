import Dispatch
import Synchronization

/// A place where work runs: an ``EventLoop``, a Dispatch queue, the caller's own stack (``none``), or
/// a backend of your own (a test's virtual clock).
///
/// Every API of this library that takes a callback also takes `on scheduler: Scheduler = .current`,
/// read when the API is called: callbacks run where the code that registered them was running, unless
/// told otherwise.
///
/// ```swift
/// Scheduler.main.async { print("on the main loop") }
/// let imageProcessing = Scheduler(label: "image processing", attributes: .concurrent)
/// imageProcessing.async(after: 0.1) { print("on a Dispatch queue, 100 ms later") }
/// ```
public final class Scheduler: Sendable {
    @usableFromInline
    enum Backend: Sendable {
        case loop(EventLoop)
        case queue(DispatchQueue)
        case immediate
        case custom(any SchedulerBackend)
    }

    @usableFromInline
    let backend: Backend

    /// The loop, queue or object this scheduler stands for: schedulers over the same one are equal.
    @usableFromInline
    let identity: ObjectIdentifier

    init(loop: EventLoop) {
        backend = .loop(loop)
        identity = ObjectIdentifier(loop)
    }

    private init(immediate: Void) {
        backend = .immediate
        identity = ObjectIdentifier(ImmediateIdentity.shared)
    }

    /// A scheduler running work on `queue`.
    public init(queue: DispatchQueue) {
        backend = .queue(queue)
        identity = ObjectIdentifier(queue)
        queue.setSpecific(key: Scheduler.queueIdentityKey, value: QueueIdentity(identity))
    }

    /// A scheduler running work on a new Dispatch queue made with these arguments.
    public convenience init(
        label: String,
        qos: DispatchQoS = .default,
        attributes: DispatchQueue.Attributes = [],
        autoreleaseFrequency: DispatchQueue.AutoreleaseFrequency = .inherit,
        target: DispatchQueue? = nil
    ) {
        self.init(queue: DispatchQueue(
            label: label, qos: qos, attributes: attributes, autoreleaseFrequency: autoreleaseFrequency,
            target: target))
    }

    /// A scheduler running work through your own `async` and `sync` functions.
    ///
    /// - Parameters:
    ///   - identifyingObject: schedulers made with the same object are equal.
    ///   - async: runs the work it is given later, asynchronously.
    ///   - sync: runs the work it is given before returning.
    @preconcurrency
    public convenience init(
        identifyingObject: AnyObject,
        async: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        sync: @escaping @Sendable (() -> Void) -> Void
    ) {
        self.init(backend: ClosureBackend(async: async, sync: sync), identity: ObjectIdentifier(identifyingObject))
    }

    /// A scheduler running work on `backend`: a virtual clock, a run loop, a thread pool of your own.
    public convenience init(backend: any SchedulerBackend) {
        self.init(backend: backend, identity: ObjectIdentifier(backend))
    }

    private init(backend: any SchedulerBackend, identity: ObjectIdentifier) {
        self.backend = .custom(backend)
        self.identity = identity
    }

    // MARK: Well-known schedulers

    /// The main event loop (``EventLoop/main``), running on the main thread.
    public static var main: Scheduler { mainLoopScheduler }

    /// The main loop's scheduler, made once: the main loop lives for the whole program.
    static let mainLoopScheduler = Scheduler(loop: EventLoop.main)

    /// A serial Dispatch queue for background work.
    public static let background = Scheduler(label: "flow.background")

    /// A concurrent Dispatch queue for background work.
    public static let concurrentBackground = Scheduler(label: "flow.concurrentBackground", attributes: .concurrent)

    /// Runs work immediately on the caller's stack and never schedules it.
    public static let none = Scheduler(immediate: ())

    /// The scheduler whose work is running on this thread: inside a callback, the scheduler that runs
    /// it; elsewhere ``main`` on the main thread or main queue, the scheduler of another library's
    /// loop on that loop's thread (see ``registerForeignThreadScheduler(_:)``), ``background`` on any
    /// other thread.
    @inlinable
    public static var current: Scheduler {
        let context = ThreadContext.current
        if let scheduler = context.currentScheduler { return scheduler }
        if MainThread.isMainContext(context) { return .main }
        return foreignThreadScheduler(in: context) ?? .background
    }

    /// The scheduler whose work is running on this thread, or `nil` off any scheduler. Unlike
    /// ``current`` it does not fall back to ``background``: the main thread and main queue still
    /// answer ``main``.
    @inlinable
    public static var executing: Scheduler? {
        let context = ThreadContext.current
        if let scheduler = context.currentScheduler { return scheduler }
        if MainThread.isMainContext(context) { return .main }
        return foreignThreadScheduler(in: context)
    }

    // MARK: Running work

    /// Runs `work` on this scheduler: at once if the caller is already executing on it (or it is
    /// ``none``), otherwise later, in the order submitted.
    ///
    /// Work run at once never grows the stack without bound: past a fixed nesting depth it waits until
    /// the caller's outermost immediate work returns, still before control leaves this scheduler.
    @preconcurrency
    @inlinable
    public func async(execute work: @escaping @Sendable () -> Void) {
        let context = ThreadContext.current
        if isImmediate(in: context) {
            context.runImmediately(work)
        } else {
            enqueue(work)
        }
    }

    /// Runs `work` now if the caller is already executing on this scheduler (and not nested too deep
    /// for the stack), and says so; otherwise does nothing and returns `false`. For callers that have
    /// a cheaper way to run work than handing a closure to ``async(execute:)``.
    ///
    /// ```swift
    /// if !scheduler.runIfImmediate({ handle(value) }) {
    ///     scheduler.async { handle(value) }
    /// }
    /// ```
    @inlinable
    public func runIfImmediate(_ work: () -> Void) -> Bool {
        let context = ThreadContext.current
        guard isImmediate(in: context), context.enterImmediateFrame() else { return false }
        work()
        context.exitImmediateFrame()
        return true
    }

    /// Runs `work` later on this scheduler, never before returning, even when already executing on it.
    ///
    /// Work handed from a loop's context to another scheduler may deliver back to that loop, so it
    /// counts as the loop's pending delivery until it has run (see `EventLoop+Deliveries.swift`).
    @usableFromInline
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        let origin = ThreadContext.current.loopAwaitingDelivery
        switch backend {
        case .loop(let loop):
            guard let origin, origin !== loop else {
                loop.execute(work)
                return
            }
            // What the job hands on counts for `loop`, the loop it runs on: its own hops most likely
            // come back there.
            origin.beginDelivery()
            loop.execute {
                work()
                origin.endDelivery()
            }
        case .queue(let queue):
            guard let origin else {
                queue.async { [self] in ThreadContext.current.run(as: self) { work() } }
                return
            }
            origin.beginDelivery()
            queue.async { [self] in
                let context = ThreadContext.current
                context.run(as: self) { context.runDelivering(to: origin, work) }
                origin.endDelivery()
            }
        case .immediate:
            ThreadContext.current.runImmediately(work)
        case .custom(let backend):
            guard let origin else {
                backend.enqueue { [self] in ThreadContext.current.run(as: self) { work() } }
                return
            }
            origin.beginDelivery()
            backend.enqueue { [self] in
                let context = ThreadContext.current
                context.run(as: self) { context.runDelivering(to: origin, work) }
                origin.endDelivery()
            }
        }
    }

    /// Runs `work` on this scheduler once `delay` seconds have passed, unless the returned disposable
    /// is disposed first.
    ///
    /// On a loop scheduler this is a deadline on the loop's own timer; on a Dispatch queue, a Dispatch
    /// timer; on ``none``, the ``background`` queue's timer followed by immediate execution. A negative
    /// delay counts as zero; a delay that is not finite stops the program with a message.
    ///
    /// Set from a loop's context on another scheduler, the work counts as that loop's pending delivery
    /// until it has run or been cancelled: ``EventLoop/run()`` waits for it.
    @preconcurrency
    @discardableResult
    public func async(after delay: Double, execute work: @escaping @Sendable () -> Void) -> Disposable {
        misusePrecondition(delay.isFinite, "Scheduler.async(after:): the delay must be a finite number of seconds, not \(delay)")
        // `none` hands its delays to the background queue, which counts them itself.
        let isNone = if case .immediate = backend { true } else { false }
        if !isNone, let origin = ThreadContext.current.loopAwaitingDelivery, origin !== eventLoop {
            let delayed = DeliveringDelayedWork(origin: origin, work: work)
            delayed.attach(scheduleDelayed(after: delay) { delayed.run() })
            return delayed
        }
        return scheduleDelayed(after: delay, work)
    }

    /// ``async(after:execute:)`` without the delivery count.
    private func scheduleDelayed(after delay: Double, _ work: @escaping @Sendable () -> Void) -> Disposable {
        switch backend {
        case .loop(let loop):
            return loop.execute(after: delay, work)
        case .queue(let queue):
            let delayed = CancellableWork(work)
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(min(max(0, delay) * 1e9, 9e18)))) { [self] in
                ThreadContext.current.run(as: self) { delayed.run() }
            }
            return delayed
        case .immediate:
            return Scheduler.background.async(after: delay, execute: work)
        case .custom(let backend):
            return backend.enqueue(after: max(0, delay)) { [self] in ThreadContext.current.run(as: self) { work() } }
        }
    }

    /// Runs `work` in this scheduler's context and returns its result, blocking until it ran.
    ///
    /// Runs on the calling thread when already executing on this scheduler. On a loop scheduler from
    /// another thread, the caller waits until the loop runs the work, so the loop must be running (or
    /// be driven by the main queue, for ``main``).
    public func sync<T>(execute work: () -> T) -> T {
        sync("Scheduler.sync", execute: work)
    }

    /// `sync(execute:)` for an entry point named `caller` in the report of a wait that makes no
    /// progress (see `BlockedLoopWaitReport`).
    package func sync<T>(_ caller: @autoclosure () -> String, execute work: () -> T) -> T {
        let context = ThreadContext.current
        if isImmediate(in: context) {
            return work()
        }
        switch backend {
        case .loop(let loop):
            return Scheduler.runOnLoopAndWait(loop, caller(), work)
        case .queue(let queue):
            return queue.sync { ThreadContext.current.run(as: self, work) }
        case .immediate:
            return work()
        case .custom(let backend):
            var outcome: T?
            backend.runSynchronously {
                outcome = ThreadContext.current.run(as: self, work)
            }
            guard let outcome else {
                misuseFailure("Scheduler.sync: the custom scheduler's sync function returned without running the work")
            }
            return outcome
        }
    }

    /// Runs throwing `work` in this scheduler's context like the non-throwing `sync(execute:)`, rethrowing
    /// its error.
    public func sync<T>(execute work: () throws -> T) throws -> T {
        let outcome: Swift.Result<T, Error> = sync { Swift.Result { try work() } }
        return try outcome.get()
    }

    /// Runs `work` in this scheduler's context: at once if the scheduler is immediate (see
    /// ``isImmediate``), otherwise as `sync(execute:)`.
    public func perform<T>(work: () -> T) -> T {
        sync(execute: work)
    }

    /// Runs throwing `work` in this scheduler's context, as the non-throwing `perform(work:)`.
    public func perform<T>(work: () throws -> T) throws -> T {
        try sync(execute: work)
    }

    // MARK: Identity

    /// Whether work given to this scheduler runs at once on the calling thread: true for ``none`` and
    /// whenever the caller is already executing on this scheduler.
    @inlinable
    public var isImmediate: Bool {
        isImmediate(in: ThreadContext.current)
    }

    @inlinable
    func isImmediate(in context: ThreadContext) -> Bool {
        if let current = context.currentScheduler, current.identity == identity { return true }
        return isExecutingSlowPath(context)
    }

    /// Whether the calling thread is executing work of this scheduler.
    @inlinable
    public var isExecuting: Bool {
        let context = ThreadContext.current
        if let current = context.currentScheduler, current.identity == identity {
            return true
        }
        if case .immediate = backend { return false }
        return isExecutingSlowPath(context)
    }

    /// The checks beyond the thread's current scheduler: ``none`` is always immediate; ``main`` also
    /// owns the main thread and main queue when no other scheduler's work runs there; a Dispatch queue
    /// owns blocks submitted to it directly.
    @usableFromInline
    func isExecutingSlowPath(_ context: ThreadContext) -> Bool {
        switch backend {
        case .immediate:
            return true
        case .loop(let loop):
            return loop.isMainLoop && context.currentLoop == nil && MainThread.isMainContext(context)
        case .queue:
            return DispatchQueue.getSpecific(key: Scheduler.queueIdentityKey)?.identity == identity
        case .custom:
            // A backend running on another library's loop (SwiftNIO's) owns that loop's thread.
            guard context.currentScheduler == nil, !MainThread.isMainContext(context) else { return false }
            return Scheduler.foreignThreadScheduler(in: context)?.identity == identity
        }
    }

    /// The monotonic time this scheduler's delays are measured on, in nanoseconds: a virtual clock for
    /// a virtual-time backend, the system's monotonic clock otherwise.
    public var uptimeNanoseconds: UInt64 {
        switch backend {
        case .loop, .immediate:
            return EventLoop.uptimeNanoseconds
        case .queue:
            return DispatchTime.now().uptimeNanoseconds
        case .custom(let backend):
            return backend.uptimeNanoseconds
        }
    }

    /// The event loop behind this scheduler, if it is a loop scheduler.
    public var eventLoop: EventLoop? {
        if case .loop(let loop) = backend { return loop }
        return nil
    }

    /// The Dispatch queue behind this scheduler, if it is a queue scheduler.
    public var dispatchQueue: DispatchQueue? {
        if case .queue(let queue) = backend { return queue }
        return nil
    }

    // MARK: Helpers

    private static let queueIdentityKey = DispatchSpecificKey<QueueIdentity>()

    private static func runOnLoopAndWait<T>(_ loop: EventLoop, _ caller: String, _ work: () -> T) -> T {
        // A loop whose context blocks here cannot run its own work meanwhile: if `loop` waits for it,
        // directly or through other loops, both wait for good. Refused, with the loops named.
        let waiter = LoopSyncWaits.loopInContext(ThreadContext.current)
        if let waiter { LoopSyncWaits.begin(waiter: waiter, target: loop) }
        defer { if let waiter { LoopSyncWaits.end(waiter: waiter) } }
        return withoutActuallyEscaping(work) { work in
            let handoff = SyncHandoff<T>(work)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                handoff.run()
                done.signal()
            }
            BlockedLoopWaitReport.wait(for: done, caller: caller, loop: loop)
            return handoff.result()
        }
    }
}

extension Scheduler: Equatable, Hashable {
    /// Schedulers are equal when they run work on the same loop, queue or identifying object.
    public static func == (lhs: Scheduler, rhs: Scheduler) -> Bool { lhs.identity == rhs.identity }

    /// Hashes the identity of the loop, queue or identifying object.
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }
}

extension Scheduler: CustomStringConvertible {
    /// Names the loop or queue this scheduler runs work on.
    public var description: String {
        switch backend {
        case .loop(let loop): return "Scheduler(\(loop.name))"
        case .queue(let queue): return "Scheduler(queue: \(queue.label))"
        case .immediate: return "Scheduler.none"
        case .custom(let backend): return "Scheduler(\(type(of: backend)))"
        }
    }
}

/// A place to run work for a ``Scheduler`` that is neither an event loop nor a Dispatch queue: a
/// virtual clock for tests, a run loop, a pool of your own.
public protocol SchedulerBackend: AnyObject, Sendable {
    /// Runs `work` later, asynchronously.
    func enqueue(_ work: @escaping @Sendable () -> Void)

    /// Runs `work` before returning.
    func runSynchronously(_ work: () -> Void)

    /// Runs `work` once `delay` seconds (never negative) have passed on this backend's clock, unless the
    /// returned disposable is disposed first.
    func enqueue(after delay: Double, _ work: @escaping @Sendable () -> Void) -> Disposable

    /// This backend's clock, in nanoseconds.
    var uptimeNanoseconds: UInt64 { get }
}

/// The backend of ``Scheduler/init(identifyingObject:async:sync:)``; its delays use the background
/// queue's timer.
private final class ClosureBackend: SchedulerBackend {
    let asyncFunction: @Sendable (@escaping @Sendable () -> Void) -> Void
    let syncFunction: @Sendable (() -> Void) -> Void

    init(async: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void, sync: @escaping @Sendable (() -> Void) -> Void) {
        asyncFunction = async
        syncFunction = sync
    }

    func enqueue(_ work: @escaping @Sendable () -> Void) { asyncFunction(work) }

    func runSynchronously(_ work: () -> Void) { syncFunction(work) }

    func enqueue(after delay: Double, _ work: @escaping @Sendable () -> Void) -> Disposable {
        Scheduler.background.async(after: delay) { [self] in asyncFunction(work) }
    }

    var uptimeNanoseconds: UInt64 { DispatchTime.now().uptimeNanoseconds }
}

private final class ImmediateIdentity: Sendable {
    static let shared = ImmediateIdentity()
}

private final class QueueIdentity: Sendable {
    let identity: ObjectIdentifier
    init(_ identity: ObjectIdentifier) { self.identity = identity }
}

/// Carries non-escaping work to a loop thread and its outcome back, while the caller blocks.
// @unchecked Sendable: the caller writes `work` before handing this over and reads `outcome` only
// after the semaphore signalled that the loop thread finished writing it.
private final class SyncHandoff<T>: @unchecked Sendable {
    private var work: (() -> T)?
    private var outcome: T?

    init(_ work: @escaping () -> T) { self.work = work }

    /// Runs the work and lets go of it before the caller is woken: the caller's closure must not
    /// outlive its `withoutActuallyEscaping` scope.
    func run() {
        outcome = work!()
        work = nil
    }

    func result() -> T { outcome! }
}
