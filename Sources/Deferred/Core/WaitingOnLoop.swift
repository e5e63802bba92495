import Dispatch
import Flow
import Foundation

/// Stops the program when waiting cannot finish: the caller runs inside an event loop's own work on
/// this thread, so the loop, which may be the one to fill the value, cannot run until the wait ends.
///
/// Anywhere else the wait blocks as Deferred's does: on the main thread outside the loop's work (top-
/// level code, a test method, a block of the main queue), a value filled on another thread ends it.
/// The check costs a thread-local read and is made only when the value is not there yet.
@usableFromInline
func preconditionWaitingCanFinish(_ operation: StaticString) {
    guard let loop = Flow.Scheduler.executing?.eventLoop, loop.isRunningItsWorkOnThisThread else {
        return
    }
    misuseFailure(
        "Deferred.\(operation): called inside the work of the event loop '\(loop.name)', which cannot run while "
            + "its thread waits; the loop may be the one to fill the value, so the wait would never end. "
            + "Use upon(_:execute:) instead")
}

/// Blocks on `filled` until it is signalled or `time` comes; `true` if it was signalled.
///
/// On the main thread, outside the main loop's work, while the main loop holds work that only this
/// thread can run (work submitted to ``Flow/Scheduler/main``, a timer, I/O), a wait that lasts
/// ``MainThreadWaitReport/delay`` reports it through `FlowDiagnostics` (one line on standard error
/// unless the program set a handler): that work cannot
/// run, and if it is what fills the value, the wait never ends. The wait itself goes on as Deferred's
/// would.
@usableFromInline
func blockUntilSignalled(_ filled: DispatchSemaphore, until time: DispatchTime, _ operation: StaticString) -> Bool {
    guard let mainLoop = mainLoopHeldUpByWaiting() else {
        return filled.wait(timeout: time) == .success
    }
    let reportTime = DispatchTime.now() + MainThreadWaitReport.delay
    if time <= reportTime {
        return filled.wait(timeout: time) == .success
    }
    if filled.wait(timeout: reportTime) == .success {
        return true
    }
    if !mainLoop.isRunning, mainLoop.hasWorkWaitingToRun {
        MainThreadWaitReport.report(
            "Deferred.\(operation): the main thread has waited \(MainThreadWaitReport.delayDescription) for a "
                + "value while the main event loop '\(mainLoop.name)' holds work that only this thread runs; that "
                + "work cannot run until the wait ends, and if it is what fills the value, the wait never ends. "
                + "Fill the value off the main loop, or use upon(_:execute:) and let the loop run")
    }
    return filled.wait(timeout: time) == .success
}

/// The main loop, when the caller runs on the main thread (or main queue) outside that loop's work and
/// the loop is not being run elsewhere: blocking here holds up its work.
private func mainLoopHeldUpByWaiting() -> EventLoop? {
    guard let loop = Flow.Scheduler.executing?.eventLoop, loop === EventLoop.main, !loop.isRunning else {
        return nil
    }
    return loop
}

/// Where the main-thread wait report goes, and after how long: `FlowDiagnostics` after five seconds,
/// replaceable by tests.
enum MainThreadWaitReport {
    private static let settings = Locked<(delay: DispatchTimeInterval, sink: @Sendable (String) -> Void)>(
        (.seconds(5), { message in FlowDiagnostics.report(.warning, message) }))

    static var delay: DispatchTimeInterval {
        settings.withLock { $0.delay }
    }

    static var delayDescription: String {
        switch delay {
        case .seconds(let seconds): return "\(seconds) s"
        case .milliseconds(let milliseconds): return "\(milliseconds) ms"
        default: return "a while"
        }
    }

    static func report(_ message: String) {
        let sink = settings.withLock { $0.sink }
        sink(message)
    }

    /// Sends reports to `sink` after `delay` while `body` runs: for tests.
    static func redirect<R>(
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
}
