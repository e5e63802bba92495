// A program the tests start as a child process: the main loop's drivers need a real main thread,
// which a test case does not have. The first argument picks the scenario; the output is checked.
import Dispatch
import Flow
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writes a line straight to standard output, so it is in the pipe even if the process then traps.
func say(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(1, $0, strlen($0)) }
}
let scenario = CommandLine.arguments.dropFirst().first ?? "run"

switch scenario {
case "run":
    // Driver (a): EventLoop.main.run() on the main thread also runs DispatchQueue.main's work.
    DispatchQueue.main.async {
        say("main queue block ran on the main loop: \(Scheduler.main.isExecuting)")
        Scheduler.main.async(after: 0.01) { say("delayed main work ran") }
    }
    Scheduler.main.async { say("main scheduler work ran") }
    DispatchQueue.global().async {
        DispatchQueue.main.async { say("main queue block from another thread ran") }
    }
    // Keep the loop up until the cross-thread main-queue block has had its chance.
    let keepAlive = EventLoop.main.keepAlive()
    Scheduler.main.async(after: 0.2) { keepAlive.dispose() }
    try EventLoop.main.run()
    say("run returned")
case "dispatchMain":
    // Driver (b): the main queue is given to Dispatch; the main loop joins it without blocking it.
    DispatchQueue.global().async {
        Scheduler.main.async {
            say("main scheduler work ran under dispatchMain: \(Scheduler.main.isExecuting)")
            Scheduler.main.async(after: 0.01) {
                say("delayed main work ran under dispatchMain")
                exit(0)
            }
        }
    }
    dispatchMain()
case "runOffMainThread":
    // EventLoop.main belongs to the main thread: another thread is refused, and the main thread's own
    // run afterwards serves its work and stops when asked.
    let refused = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        do {
            try EventLoop.main.run()
            say("another thread ran the main loop")
        } catch {
            say("another thread was refused: \(error)")
        }
        refused.signal()
    }
    refused.wait()
    let keepAlive = EventLoop.main.keepAlive()
    Scheduler.main.async {
        say("main thread work ran: \(Scheduler.main.isExecuting)")
        EventLoop.main.stop()
    }
    try EventLoop.main.run()
    keepAlive.dispose()
    say("run returned after stop()")
case "executeOnClosedLoop":
    let loop = EventLoop(name: "probe")
    try loop.close()
    loop.execute { say("must not run") }
case "nonFiniteDelay":
    Scheduler.main.async(after: .nan) { say("must not run") }
default:
    say("unknown scenario \(scenario)")
    exit(2)
}
