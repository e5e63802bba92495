import Dispatch
import Flow
import Foundation
import Testing

/// The main loop, the Dispatch main queue and the main actor are one serial context: what one thread
/// submits to any of them runs in the order submitted, under every driver, and the main loop's work is
/// main-actor work. The drivers that need a real main thread run in `MainLoopProbe`.
@Suite("The main context: Scheduler.main, DispatchQueue.main and the main actor")
struct MainContextTests {
    /// The probe's ordering report: 3,000 rounds of one submission to each of the three.
    private static let orderedReport = "ordered steps: 9000, out of order: 0"

    @Test("one thread's submissions to the three run in order under EventLoop.main.run()")
    func orderUnderRun() throws {
        let run = try runProbe("orderRun")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.split(separator: "\n").first.map(String.init) == Self.orderedReport, "\(run.output)")
        #expect(run.output.hasSuffix("run returned\n"))
    }

    @Test("one thread's submissions to the three run in order under dispatchMain()")
    func orderUnderDispatchMain() throws {
        let run = try runProbe("orderDispatchMain")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.split(separator: "\n").first.map(String.init) == Self.orderedReport, "\(run.output)")
    }

    @Test("one thread's submissions to the three run in order in the test runner, whose main queue Dispatch drives")
    func orderUnderTheTestRunner() async {
        let rounds = 2000
        let steps = await withCheckedContinuation { (continuation: CheckedContinuation<[Int], Never>) in
            let seen = Shared<[Int]>([])
            @Sendable func record(_ step: Int) {
                let count = seen.mutate { seen in
                    seen.append(step)
                    return seen.count
                }
                if count == rounds * 3 { continuation.resume(returning: seen.value) }
            }
            DispatchQueue.global().async {
                for round in 0..<rounds {
                    Scheduler.main.async { record(round * 3) }
                    DispatchQueue.main.async { record(round * 3 + 1) }
                    Task { @MainActor in record(round * 3 + 2) }
                }
            }
        }
        #expect(steps == Array(0..<(rounds * 3)))
    }

    @Test("run() returns only after a @MainActor task resumed by a future's completion has run")
    func runWaitsForTheMainActorTask() throws {
        let run = try runProbe("mainActorTaskBeforeRunReturns")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.contains("main-actor tasks finished before run() returned: 20 of 20"), "\(run.output)")
    }

    @Test("MainActor.assumeIsolated holds in the main loop's work under run(), on the main thread")
    func mainActorIsolationUnderRun() throws {
        let run = try runProbe("assumeIsolatedRun")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.split(separator: "\n").map(String.init) == [
            "actor pinned to the main loop: isolated to the main actor",
            "future body on main actor",
            "main scheduler work on main actor",
            "main timer on main actor, main thread: true",
            "run returned",
        ])
    }

    @Test("MainActor.assumeIsolated holds in the main loop's work under dispatchMain(), whatever the thread")
    func mainActorIsolationUnderDispatchMain() throws {
        let run = try runProbe("assumeIsolatedDispatchMain")
        #expect(run.status == 0, "\(run.errorOutput)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.prefix(3) == [
            "actor pinned to the main loop: isolated to the main actor",
            "future body on main actor",
            "main scheduler work on main actor",
        ])
        // Dispatch may serve its main queue from a thread other than the first: the isolation holds,
        // `Thread.isMainThread` need not (Docs: SchedulersAndThreads).
        #expect(lines.last?.hasPrefix("main timer on main actor, main thread: ") == true)
    }

    @Test("MainActor.assumeIsolated holds in Scheduler.main work in the test runner")
    func mainActorIsolationInTheTestRunner() async {
        let isolated = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                Scheduler.main.async {
                    continuation.resume(returning: MainActor.assumeIsolated { Scheduler.main.isExecuting })
                }
            }
        }
        #expect(isolated)
    }
}
