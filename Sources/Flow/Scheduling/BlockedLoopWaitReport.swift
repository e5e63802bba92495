import Dispatch

/// A thread waiting in ``Scheduler/sync(execute:)`` (or a blocking entry point built on it) for a loop
/// that does not run its work: in debug builds, a report through ``FlowDiagnostics`` after a few
/// seconds, naming the waiting call and the loop, and the wait goes on.
///
/// The library cannot always tell that the loop's thread is blocked (the main thread waiting on a
/// semaphore, or in a `sync` of its own, outside the main loop's work), but a wait that makes no
/// progress for seconds says so. Release builds wait without the timer.
package enum BlockedLoopWaitReport {
    /// How long a wait lasts before it is reported: five seconds unless a test changes it.
    package static var delay: DispatchTimeInterval {
        settings.withLock { $0.delay }
    }

    private static let settings = Locked<(delay: DispatchTimeInterval, sink: (@Sendable (String) -> Void)?)>(
        (.seconds(5), nil))

    /// Blocks until `done` is signalled; in debug builds, reports a wait that lasts ``delay``.
    static func wait(for done: DispatchSemaphore, caller: String, loop: EventLoop) {
        #if DEBUG
            let (delay, sink) = settings.withLock { ($0.delay, $0.sink) }
            guard done.wait(timeout: .now() + delay) == .timedOut else { return }
            let context = loop.isMainLoop
                ? "the main thread is not serving the main loop: it may be blocked (on a semaphore, in a sync, "
                    + "in a Deferred wait) outside the loop's work, and while it is, this wait never ends"
                : "its thread may be blocked in a job of its own, or waiting for this thread"
            let message = "\(caller): this thread has waited \(describe(delay)) for the event loop '\(loop.name)' "
                + "to run its work, and it has not; \(context). Hand the work over with perform (async) or a "
                + "future instead of waiting for it"
            if let sink {
                sink(message)
            } else {
                FlowDiagnostics.report(.warning, message, metadata: ["loop": loop.name])
            }
        #endif
        done.wait()
    }

    /// Sends the reports to `sink` after `delay` while `body` runs: for tests.
    package static func redirect<R>(
        after delay: DispatchTimeInterval, to sink: @escaping @Sendable (String) -> Void, _ body: () throws -> R
    ) rethrows -> R {
        let saved = settings.withLock { settings in
            let saved = settings
            settings = (delay, sink)
            return saved
        }
        defer { settings.withLock { $0 = saved } }
        return try body()
    }

    private static func describe(_ delay: DispatchTimeInterval) -> String {
        switch delay {
        case .seconds(let seconds): return "\(seconds) s"
        case .milliseconds(let milliseconds): return "\(milliseconds) ms"
        default: return "a while"
        }
    }
}
