import Dispatch
import Flow
import NIOCore
import Synchronization

/// A Flow `EventLoop` seen through SwiftNIO's `EventLoop` protocol, for NIO code that only needs
/// a place to schedule work: promises, futures, `execute`, `scheduleTask`, and actors on its
/// ``executor``.
///
/// Work runs on the Flow loop's thread, in the order submitted; `inEventLoop` is true there. It is not
/// a loop NIO can run channels on (sockets belong to NIO's own loops), and it cannot be shut down
/// through NIO: the Flow loop belongs to whoever started it, so `shutdownGracefully` reports
/// `EventLoopError.unsupportedOperation`.
///
/// When the Flow loop shuts down, the promises of the tasks still scheduled fail with
/// `EventLoopError.shutdown`, and so does a task scheduled afterwards, as on NIO's own loops. From then
/// on the adapter's work (those failures, and what NIO code submits later) runs one job at a time
/// on a queue of its own, where `inEventLoop` is true, so that the loop's promises still complete;
/// NIO's own loops drop work submitted after their shutdown.
///
/// ```swift
/// let loop = Flow.EventLoop.startOnNewThread(name: "worker")
/// let nioLoop = loop.nioEventLoop
/// let answer: EventLoopFuture<Int> = nioLoop.submit { 6 * 7 }   // runs on the Flow loop
///
/// actor Counter {
///     nonisolated let unownedExecutor: UnownedSerialExecutor
///     init(on loop: FlowNIOEventLoop) { unownedExecutor = loop.asUnownedSerialExecutor() }
/// }
/// ```
public final class FlowNIOEventLoop: NIOCore.EventLoop, NIOSerialEventLoopExecutor, CustomStringConvertible {
    /// The Flow loop that runs this loop's work.
    public let flowLoop: Flow.EventLoop

    /// Set once the adapter has seen the Flow loop shut down: its work goes to `afterShutdown` then.
    private let hasSeenShutdown = Atomic<Bool>(false)

    /// Runs the adapter's work, one job at a time, once the Flow loop has shut down.
    private let afterShutdown: DispatchQueue

    /// The succeeded `Void` future last made on the loop, while something still holds it: weakly, since
    /// the future holds this loop, which would otherwise never be freed.
    // nonisolated(unsafe): read and written only in the Flow loop's context, one job at a time.
    nonisolated(unsafe) private weak var lastSucceededVoidFuture: EventLoopFuture<Void>?

    init(_ flowLoop: Flow.EventLoop) {
        self.flowLoop = flowLoop
        afterShutdown = DispatchQueue(label: "FlowNIOEventLoop(\(flowLoop.name)) after its shutdown")
        afterShutdown.setSpecific(key: Self.afterShutdownKey, value: ObjectIdentifier(self))
    }

    private static let afterShutdownKey = DispatchSpecificKey<ObjectIdentifier>()

    /// Whether the calling thread is running the Flow loop (or, after its shutdown, the adapter's
    /// queue).
    public var inEventLoop: Bool {
        flowLoop.isInLoopContext || isOnAfterShutdownQueue
    }

    private var isOnAfterShutdownQueue: Bool {
        hasSeenShutdown.load(ordering: .acquiring)
            && DispatchQueue.getSpecific(key: Self.afterShutdownKey) == ObjectIdentifier(self)
    }

    /// Whether the Flow loop has shut down, as far as the adapter knows.
    private var isShutDown: Bool {
        if hasSeenShutdown.load(ordering: .acquiring) { return true }
        if flowLoop.isClosed {
            hasSeenShutdown.store(true, ordering: .releasing)
            return true
        }
        return false
    }

    /// Runs `work` on the adapter's own queue, which stands in for the Flow loop once it has shut down.
    private func runAfterShutdown(_ work: @escaping @Sendable () -> Void) {
        hasSeenShutdown.store(true, ordering: .releasing)
        afterShutdown.async(execute: work)
    }

    /// Runs `task` on the Flow loop (after its shutdown, on the adapter's queue).
    @preconcurrency
    public func execute(_ task: @escaping @Sendable () -> Void) {
        if !isShutDown {
            do {
                try flowLoop.submit(task)
                return
            } catch {
                // Closed meanwhile: the task runs after the shutdown, as below.
            }
        }
        runAfterShutdown(task)
    }

    /// Runs `task` on the Flow loop at `deadline` (on NIO's clock), unless the returned `Scheduled` is
    /// cancelled first, or the loop shuts down first (then its promise fails with
    /// `EventLoopError.shutdown`).
    @preconcurrency
    public func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let now = NIODeadline.now()
        let delay = deadline > now ? deadline - now : .zero
        return scheduleTask(in: delay, task)
    }

    /// Runs `task` on the Flow loop once `delay` has passed, on the loop's own timer, unless the returned
    /// `Scheduled` is cancelled first, or the loop shuts down first (then its promise fails with
    /// `EventLoopError.shutdown`).
    @preconcurrency
    public func scheduleTask<T>(in delay: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let promise = makePromise(of: T.self)
        let now = Flow.EventLoop.uptimeNanoseconds
        let nanoseconds = UInt64(max(0, delay.nanoseconds))
        let deadline = nanoseconds < UInt64.max - now ? now + nanoseconds : .max
        guard !isShutDown else {
            failWithShutdown(promise)
            return Scheduled(promise: promise, cancellationTask: {})
        }
        let state = ScheduledTaskState()
        // Released with the loop's job: unrun and not cancelled, the loop dropped it as it shut down.
        let dropWatch = DropWatch { [self] in
            if state.dropUnrun() {
                hasSeenShutdown.store(true, ordering: .releasing)
                failWithShutdown(promise)
            }
        }
        let job: @Sendable () -> Void = {
            withExtendedLifetime(dropWatch) {}
            guard state.start() else { return }
            // On the loop's own thread, where the promise lives: its value need not be Sendable.
            do {
                promise.assumeIsolated().succeed(try task())
            } catch {
                promise.fail(error)
            }
        }
        if flowLoop.isInLoopContext {
            state.arm(flowLoop.execute(atUptimeNanoseconds: deadline, job))
        } else {
            // The deadline is set from the loop, so that a loop closed meanwhile refuses the job (which
            // the drop watch then fails) rather than stopping the program.
            try? flowLoop.submit { [flowLoop] in
                state.arm(flowLoop.execute(atUptimeNanoseconds: deadline, job))
            }
        }
        return Scheduled(promise: promise, cancellationTask: { state.cancel() })
    }

    /// Fails `promise` with `EventLoopError.shutdown`, among the adapter's work after the shutdown.
    private func failWithShutdown<T>(_ promise: EventLoopPromise<T>) {
        if isOnAfterShutdownQueue {
            promise.fail(NIOCore.EventLoopError.shutdown)
        } else {
            runAfterShutdown { promise.fail(NIOCore.EventLoopError.shutdown) }
        }
    }

    /// A succeeded `Void` future: on the loop, the same one as long as something holds the last one
    /// made, as NIO's loops cache theirs; a new one elsewhere.
    public func makeSucceededVoidFuture() -> EventLoopFuture<Void> {
        guard flowLoop.isInLoopContext else {
            return newSucceededVoidFuture()
        }
        if let future = lastSucceededVoidFuture {
            return future
        }
        let future = newSucceededVoidFuture()
        lastSucceededVoidFuture = future
        return future
    }

    private func newSucceededVoidFuture() -> EventLoopFuture<Void> {
        // Through a promise: `makeSucceededFuture(())` would come back here.
        let promise = makePromise(of: Void.self)
        promise.succeed(())
        return promise.futureResult
    }

    /// Stops the program with a message unless called on the Flow loop's thread.
    public func preconditionInEventLoop(file: StaticString, line: UInt) {
        misusePrecondition(inEventLoop, "\(self): expected to run on the loop's thread", file: file, line: line)
    }

    /// Stops the program with a message if called on the Flow loop's thread.
    public func preconditionNotInEventLoop(file: StaticString, line: UInt) {
        misusePrecondition(!inEventLoop, "\(self): expected not to run on the loop's thread", file: file, line: line)
    }

    /// This loop (a loop is a group of one).
    public func next() -> any NIOCore.EventLoop { self }

    /// This loop (a loop is a group of one).
    public func any() -> any NIOCore.EventLoop { self }

    /// An iterator over this loop alone.
    public func makeIterator() -> EventLoopIterator { EventLoopIterator([self]) }

    /// Reports `EventLoopError.unsupportedOperation` on `queue`: stop the Flow loop through Flow
    /// (`EventLoop.shutdown()`), which owns it.
    @preconcurrency
    public func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable (Error?) -> Void) {
        queue.async { callback(NIOCore.EventLoopError.unsupportedOperation) }
    }

    /// Names the Flow loop.
    public var description: String { "FlowNIOEventLoop(\(flowLoop.name))" }
}

/// Where a task of ``FlowNIOEventLoop/scheduleTask(in:_:)`` stands: waiting for its deadline (with the
/// loop's timer once set), started, or cancelled (by its `Scheduled`, or dropped by a closing loop).
private final class ScheduledTaskState: Sendable {
    private enum Phase {
        case waiting(timer: (any Disposable)?)
        case started
        case cancelled
    }

    private let phase = Locked(Phase.waiting(timer: nil))

    /// Keeps the loop's timer, to cancel it; cancels it at once if the task was cancelled meanwhile.
    func arm(_ timer: any Disposable) {
        let cancelled = phase.withLock { phase -> Bool in
            guard case .waiting = phase else { return true }
            phase = .waiting(timer: timer)
            return false
        }
        if cancelled { timer.dispose() }
    }

    /// Whether the task may run: it was neither cancelled nor started already.
    func start() -> Bool {
        phase.withLock { phase in
            guard case .waiting = phase else { return false }
            phase = .started
            return true
        }
    }

    /// Cancels the loop's timer, unless the task started.
    func cancel() {
        let timer = phase.withLock { phase -> (any Disposable)? in
            guard case .waiting(let timer) = phase else { return nil }
            phase = .cancelled
            return timer
        }
        timer?.dispose()
    }

    /// Whether the task was still waiting when the loop let go of its job: then it never runs.
    func dropUnrun() -> Bool {
        phase.withLock { phase in
            guard case .waiting = phase else { return false }
            phase = .cancelled
            return true
        }
    }
}

/// Calls its closure when released: held only by a job given to the loop, it tells when the loop let
/// go of the job, run or not.
private final class DropWatch: Sendable {
    private let released: @Sendable () -> Void

    init(_ released: @escaping @Sendable () -> Void) {
        self.released = released
    }

    deinit {
        released()
    }
}

extension Flow.EventLoop {
    /// This loop as a SwiftNIO `EventLoop` (the same object on every call while it is in use), for NIO
    /// code that needs somewhere to run work and complete promises: see ``FlowNIOEventLoop``.
    ///
    /// The adapter holds this loop. Once nothing else holds the adapter, a later call of this property
    /// (for any loop) lets both go.
    public var nioEventLoop: FlowNIOEventLoop {
        let key = ObjectIdentifier(self)
        let (adapter, unused) = FlowNIOEventLoop.adapters.withLock { adapters in
            let unused = FlowNIOEventLoop.removeUnused(from: &adapters, keeping: key)
            if let existing = adapters[key] { return (existing, unused) }
            let made = FlowNIOEventLoop(self)
            adapters[key] = made
            return (made, unused)
        }
        // Released outside the lock: an adapter may hold the last reference to its Flow loop.
        withExtendedLifetime(unused) {}
        return adapter
    }
}

extension FlowNIOEventLoop {
    /// The adapters made so far, by their Flow loop, held strongly: NIO's futures retain and release
    /// their loop for each future made, which a weak reference would send through the runtime's slow
    /// path (a side table) every time. An adapter nothing else holds any more is removed the next time
    /// an adapter is looked up; its Flow loop goes with it.
    fileprivate static let adapters = Locked<[ObjectIdentifier: FlowNIOEventLoop]>([:])

    /// Removes from `adapters` (under their lock) those only the table still holds, except the one for
    /// `key`, and returns them to be released outside the lock. Unique under the lock means unused:
    /// only the table can hand one out again.
    fileprivate static func removeUnused(
        from adapters: inout [ObjectIdentifier: FlowNIOEventLoop], keeping key: ObjectIdentifier
    ) -> [FlowNIOEventLoop] {
        // The keys are copied first: an index (or `indices`) holds the dictionary's storage, and the
        // uniqueness check would then copy it, and every adapter with it.
        var unusedKeys: [ObjectIdentifier] = []
        for candidate in Array(adapters.keys) where candidate != key {
            if isKnownUniquelyReferenced(&adapters[candidate]!) { unusedKeys.append(candidate) }
        }
        return unusedKeys.compactMap { adapters.removeValue(forKey: $0) }
    }
}
