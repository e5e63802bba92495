import CLibUV
import Dispatch
import Synchronization

/// Runs the main loop from the Dispatch main queue, for programs whose main thread is given to
/// Dispatch (`dispatchMain()`, an `async` `@main`, a test runner) rather than to ``EventLoop/run()``.
///
/// This is how libuv is embedded in another loop: a read source watches libuv's backend fd (its epoll
/// fd, readable when any handle has an event) and a timer follows `uv_backend_timeout`; either runs the
/// loop once without blocking. While ``EventLoop/run()`` drives the main loop, both are suspended.
final class MainQueueEmbedding: @unchecked Sendable {
    // @unchecked Sendable: the sources and `isSuspended` are used only on the main queue (or by the main
    // thread inside `run()`, which is the main queue's context then); `isPumpRequested` is atomic.
    private unowned let loop: EventLoop
    private let readSource: DispatchSourceRead
    private let timer: DispatchSourceTimer
    private var isSuspended = false
    private var isCancelled = false
    private let isPumpRequested = Atomic<Bool>(false)

    init(loop: EventLoop) {
        self.loop = loop
        readSource = DispatchSource.makeReadSource(fileDescriptor: uv_backend_fd(loop.uvLoop), queue: .main)
        timer = DispatchSource.makeTimerSource(queue: .main)
        readSource.setEventHandler { [unowned self] in pump() }
        timer.setEventHandler { [unowned self] in pump() }
        timer.schedule(deadline: .distantFuture)
        readSource.resume()
        timer.resume()
        MainThread.markMainQueue()
        // libuv registers handles with epoll only inside uv_run: one pass makes the wake-up handle visible.
        requestPump()
    }

    /// Schedules one non-blocking pass of the loop on the main queue, unless one is already scheduled.
    func requestPump() {
        guard !isPumpRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.main.async { [self] in pump() }
    }

    /// Called in the loop's context after a change libuv only notices inside uv_run (a new timer).
    func loopDidChange() {
        if !loop.loopIsInsideRun { requestPump() }
    }

    /// Whether the main queue is driving the loop now: not suspended by ``EventLoop/run()``, not
    /// cancelled. Main-context only.
    var isDriving: Bool { !isSuspended && !isCancelled }

    /// Whether the main queue has run the loop at least once: a program whose main thread runs plain
    /// top-level code never serves the main queue. Main-context only.
    private(set) var hasPumped = false

    private func pump() {
        isPumpRequested.store(false, ordering: .releasing)
        guard !isCancelled, !isSuspended, !loop.loopIsInsideRun, !loop.isRunning, !loop.isClosed else { return }
        hasPumped = true
        ThreadContext.current.run(as: loop.scheduler, loop: loop) {
            loop.reconcileKeepAlive()
            loop.loopIsInsideRun = true
            uv_run(loop.uvLoop, UV_RUN_NOWAIT)
            loop.loopIsInsideRun = false
        }
        let timeout = uv_backend_timeout(loop.uvLoop)
        if timeout < 0 {
            timer.schedule(deadline: .distantFuture)
        } else if timeout == 0 {
            requestPump()
        } else {
            timer.schedule(deadline: .now() + .milliseconds(Int(timeout)))
        }
    }

    /// Stops driving the loop while ``EventLoop/run()`` does.
    func suspend() {
        guard !isSuspended, !isCancelled else { return }
        isSuspended = true
        readSource.suspend()
        timer.suspend()
    }

    /// Drives the loop again after ``EventLoop/run()`` returned.
    func resume() {
        guard isSuspended, !isCancelled else { return }
        isSuspended = false
        readSource.resume()
        timer.resume()
        requestPump()
    }

    /// Stops for good, before the loop is closed.
    func cancel() {
        guard !isCancelled else { return }
        if isSuspended {
            readSource.resume()
            timer.resume()
            isSuspended = false
        }
        isCancelled = true
        readSource.cancel()
        timer.cancel()
    }
}

/// Facts about the main thread and the main queue.
@usableFromInline
enum MainThread {
    private static let mainQueueKey = DispatchSpecificKey<UInt8>()

    /// Tags the main queue so that ``isOnMainQueue`` can recognise it from any thread.
    static func markMainQueue() {
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: 1)
    }

    private static let marked: Void = markMainQueue()

    /// Whether the caller runs a block of the Dispatch main queue (under `dispatchMain()` that can be
    /// a thread other than the first one).
    @usableFromInline
    static var isOnMainQueue: Bool {
        _ = marked
        return DispatchQueue.getSpecific(key: mainQueueKey) != nil
    }

    /// Whether the caller is in the main context: the main thread, or a block of the main queue.
    @usableFromInline
    static func isMainContext(_ context: ThreadContext) -> Bool {
        context.isMainThread || isOnMainQueue
    }
}
