// A program the tests start as a child process: the main loop's drivers need a real main thread,
// which a test case does not have. The first argument picks the scenario; the output is checked.
import Dispatch
import Flow
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Writes a line straight to standard output, so it is in the pipe even if the process then traps.
func say(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(1, $0, strlen($0)) }
}
/// Steps recorded from the main context, read once at the end.
final class StepLog: Sendable {
    private let recorded = Mutex<[Int]>([])
    func append(_ step: Int) -> Int { recorded.withLock { $0.append(step); return $0.count } }
    var steps: [Int] { recorded.withLock { $0 } }
}

/// An actor whose executor is the main loop.
actor MainLoopPinned {
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.main.asUnownedSerialExecutor() }
    func check() -> String { MainActor.assumeIsolated { "isolated to the main actor" } }
}

/// Main-loop work that schedules a timer for the next turn, and sets and cancels another, `left` times.
enum MainTimerChurn {
    static func schedule(_ left: Int) {
        guard left > 0 else { return }
        Scheduler.main.async(after: 0) { schedule(left - 1) }
        EventLoop.main.execute(after: 60) {}.dispose()
    }
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
case "activeResourcesUnderDispatchMain":
    // Another thread lists the main loop's resources while the main queue drives the loop and its work
    // keeps scheduling timers (issue #39, item 1: it used to read the deadline heap unguarded).
    let inspections = 2000
    DispatchQueue.main.async { MainTimerChurn.schedule(1_000_000) }
    DispatchQueue.global().async {
        for _ in 0..<inspections { _ = EventLoop.main.activeResources() }
        say("listed the main loop's resources \(inspections) times")
        exit(0)
    }
    dispatchMain()
case "touchThenDispatchMain":
    // The main thread uses Flow (which gives it a thread context) before dispatchMain() ends it with
    // pthread_exit; the process then ends normally, from a main-queue block.
    _ = Scheduler.current
    DispatchQueue.main.async {
        say("main queue block ran after dispatchMain()")
        exit(0)
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
case "orderRun", "orderDispatchMain":
    // One background thread submits to Scheduler.main, DispatchQueue.main and the main actor in turn;
    // the main context must run them in that order, whichever driver serves it.
    let rounds = 3000
    let seen = StepLog()
    let finished = DispatchSemaphore(value: 0)
    @Sendable func record(_ step: Int) {
        precondition(MainActor.assumeIsolated { true })
        let count = seen.append(step)
        if count == rounds * 3 { finished.signal() }
    }
    @Sendable func report() {
        let steps = seen.steps
        let outOfOrder = zip(steps, steps.dropFirst()).filter { $0.0 + 1 != $0.1 }.count
        say("ordered steps: \(steps.count), out of order: \(outOfOrder)")
        say("first: \(steps.prefix(24).map { "\($0 % 3 == 0 ? "S" : $0 % 3 == 1 ? "Q" : "T")\($0 / 3)" })")
    }
    let keepAlive = EventLoop.main.keepAlive()
    DispatchQueue.global().async {
        for round in 0..<rounds {
            Scheduler.main.async { record(round * 3) }
            DispatchQueue.main.async { record(round * 3 + 1) }
            Task { @MainActor in record(round * 3 + 2) }
        }
        finished.wait()
        Scheduler.main.async {
            report()
            keepAlive.dispose()
            if scenario == "orderDispatchMain" { exit(0) }
        }
    }
    if scenario == "orderRun" {
        try EventLoop.main.run()
        say("run returned")
    } else {
        dispatchMain()
    }
case "mainActorTaskBeforeRunReturns":
    // A @MainActor task resumed by a future's completion is main-context work that run() must run:
    // each round, run() returns only after the task printed. Rounds, because a lost task was a race.
    let rounds = 20
    let finished = StepLog()
    var roundsInTime = 0
    for round in 0..<rounds {
        let delayed = Future(round).delay(by: 0.002)
        Task { @MainActor in
            let value = try await delayed.get()
            _ = finished.append(value)
        }
        try EventLoop.main.run()
        if finished.steps.count == round + 1 { roundsInTime += 1 }
    }
    say("main-actor tasks finished before run() returned: \(roundsInTime) of \(rounds)")
case "assumeIsolatedRun", "assumeIsolatedDispatchMain":
    // Work the main loop runs is main-actor work: MainActor.assumeIsolated holds in each kind of it.
    let keepAlive = EventLoop.main.keepAlive()
    Task.detached {
        let onMainLoop = await MainLoopPinned().check()
        say("actor pinned to the main loop: \(onMainLoop)")
        let fromFuture = try await Future(on: .main) { MainActor.assumeIsolated { "future body on main actor" } }.get()
        say(fromFuture)
        let hopped = await withCheckedContinuation { continuation in
            Scheduler.main.async {
                continuation.resume(returning: MainActor.assumeIsolated { "main scheduler work on main actor" })
            }
        }
        say(hopped)
        Scheduler.main.async(after: 0.01) {
            say(MainActor.assumeIsolated { "main timer on main actor, main thread: \(Thread.isMainThread)" })
            keepAlive.dispose()
            if scenario == "assumeIsolatedDispatchMain" { exit(0) }
        }
    }
    if scenario == "assumeIsolatedRun" {
        try EventLoop.main.run()
        say("run returned")
    } else {
        dispatchMain()
    }
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
