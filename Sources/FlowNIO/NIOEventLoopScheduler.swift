import Dispatch
import Flow
import NIOCore
import NIOPosix

extension Scheduler {
    /// A Flow scheduler that runs work on a SwiftNIO event loop.
    ///
    /// Schedulers made for the same loop are equal. On the loop's own thread the scheduler is immediate,
    /// and it is that thread's `Scheduler.current`: a Flow callback registered from a channel
    /// handler runs on the handler's loop, at once when its future has already completed.
    ///
    /// ```swift
    /// let scheduler = Scheduler(eventLoop: channel.eventLoop)
    /// lookUp(name).onValue(on: scheduler) { address in channel.writeAndFlush(address, promise: nil) }
    /// ```
    public convenience init(eventLoop: any NIOCore.EventLoop) {
        self.init(backend: NIOEventLoopScheduler.backend(for: eventLoop))
    }
}

extension NIOCore.EventLoop {
    /// This loop as a Flow `Scheduler`: see `Scheduler(eventLoop:)`.
    public var flowScheduler: Scheduler { Scheduler(eventLoop: self) }
}

/// A SwiftNIO event loop as the backend of a Flow `Scheduler`: work runs through the loop's
/// `execute`, delays through its `scheduleTask`, time on its clock (virtual for `EmbeddedEventLoop`).
///
/// There is one backend per loop, so that schedulers for the same loop are equal; make the scheduler
/// with `Scheduler(eventLoop:)`.
public final class NIOEventLoopScheduler: SchedulerBackend {
    /// The SwiftNIO loop that runs this backend's work.
    public let eventLoop: any NIOCore.EventLoop

    private init(_ eventLoop: any NIOCore.EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Runs `work` later, on the loop.
    @preconcurrency
    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        eventLoop.execute(work)
    }

    /// Runs `work` on the loop before returning: at once on the loop's thread, otherwise by waiting for
    /// the loop to run it.
    public func runSynchronously(_ work: () -> Void) {
        if eventLoop.inEventLoop {
            work()
            return
        }
        withoutActuallyEscaping(work) { work in
            let handoff = WorkHandoff(work)
            let done = DispatchSemaphore(value: 0)
            eventLoop.execute {
                handoff.run()
                done.signal()
            }
            done.wait()
        }
    }

    /// Runs `work` on the loop once `delay` seconds have passed on its clock, unless disposed first.
    @preconcurrency
    public func enqueue(after delay: Double, _ work: @escaping @Sendable () -> Void) -> Disposable {
        let nanoseconds = Int64(min(delay * 1e9, 9e18))
        let scheduled = eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { work() }
        return ScheduledTaskCancellation(scheduled: scheduled)
    }

    /// The loop's clock, in nanoseconds.
    public var uptimeNanoseconds: UInt64 { eventLoop.now.uptimeNanoseconds }

    // MARK: One backend per loop

    private static let backends = Locked<[ObjectIdentifier: WeakBackend]>([:])

    /// The backend of `eventLoop`: the one already made while a scheduler still uses it, else a new one.
    static func backend(for eventLoop: any NIOCore.EventLoop) -> NIOEventLoopScheduler {
        FlowNIOBridge.install()
        let key = ObjectIdentifier(eventLoop)
        return backends.withLock { backends in
            if let existing = backends[key]?.backend, existing.eventLoop === eventLoop { return existing }
            if backends.count > 64 { backends = backends.filter { $0.value.backend != nil } }
            let made = NIOEventLoopScheduler(eventLoop)
            backends[key] = WeakBackend(backend: made)
            return made
        }
    }
}

/// Cancels a NIO scheduled task when disposed, and only then (a `Disposer` would also cancel it when
/// released, and a delayed call's disposable is usually dropped).
private struct ScheduledTaskCancellation: Disposable {
    let scheduled: Scheduled<Void>
    func dispose() { scheduled.cancel() }
}

/// A weak reference, so that the table of backends keeps no loop alive.
private struct WeakBackend: @unchecked Sendable {
    // @unchecked Sendable: only read and written under the lock of `NIOEventLoopScheduler.backends`.
    weak var backend: NIOEventLoopScheduler?
}

/// Carries non-escaping work to the loop's thread while the caller blocks.
// @unchecked Sendable: the caller hands `work` over before the loop runs it, and waits on a semaphore
// that the loop signals after `run()` has let go of it.
private final class WorkHandoff: @unchecked Sendable {
    private var work: (() -> Void)?
    init(_ work: @escaping () -> Void) { self.work = work }
    func run() {
        work!()
        work = nil
    }
}

/// Connects SwiftNIO's threads to Flow once: on the thread of a `MultiThreadedEventLoopGroup` loop,
/// `Scheduler.current` is that loop's scheduler.
///
/// Call ``install()`` once at startup in a program that runs Flow code on NIO's threads:
///
/// ```swift
/// FlowNIOBridge.install()
/// let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
/// ```
public enum FlowNIOBridge {
    /// Makes every SwiftNIO loop thread answer `Scheduler.current` with its loop's scheduler.
    ///
    /// Every FlowNIO conversion and `Scheduler(eventLoop:)` call it too, but a Flow future
    /// created on a NIO thread before any of them ran would not know its loop and would run its
    /// callbacks on `Scheduler.background`: call it at startup. Calling it again does nothing.
    public static func install() {
        _ = registration
    }

    private static let registration: Void = {
        Scheduler.registerForeignThreadScheduler {
            MultiThreadedEventLoopGroup.currentEventLoop.map { Scheduler(eventLoop: $0) }
        }
    }()
}
