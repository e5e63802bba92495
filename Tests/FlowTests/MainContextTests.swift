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

    @Test("a main thread that used Flow ends cleanly in dispatchMain(), and the program then exits normally")
    func mainThreadContextEndsCleanlyUnderDispatchMain() throws {
        // dispatchMain() ends the main thread with pthread_exit, which frees the thread's Flow context
        // on a stack that was unwound, not returned from. Under AddressSanitizer (CI runs this test
        // there too) that drew a report until the destructor cleared the unwound frames' poison.
        let run = try runProbe("touchThenDispatchMain")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output == "main queue block ran after dispatchMain()\n")
        #expect(!run.errorOutput.contains("AddressSanitizer"), "\(run.errorOutput)")
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

    @MainActor
    @Test("callbacks given on: .mainActor update main-actor state from futures and signals, with no box")
    func mainActorCallbacksUpdateMainActorState() async throws {
        let model = MainActorModel()
        let bag = DisposeBag()
        let signal = ReadWriteSignal(0)
        bag += signal.onValue(on: .mainActor) { model.log.append("signal \($0)") }
        // Completed on another loop's thread: the callbacks still run on the main loop, as the main actor.
        let loop = EventLoop.startOnNewThread(name: "test.mainActorCallbacks")
        defer { loop.shutdown() }
        let value = Future<Int>(on: loop.scheduler) { completion in
            loop.execute { completion(.success(20)) }
            return NilDisposer()
        }
        let chained = value
            .onValue(on: .mainActor) { model.log.append("onValue \($0)") }
            .onResult(on: .mainActor) { model.log.append("onResult \((try? $0.get()) ?? -1)") }
            .map(on: .mainActor) { value -> Int in
                model.log.append("map")
                signal.value = 1
                return value + 1
            }
            .flatMap(on: .mainActor) { value -> Future<Int> in
                model.log.append("flatMap")
                return Future(value + 1)
            }
            .always(on: .mainActor) { model.log.append("always") }
        #expect(try await chained.get() == 22)
        #expect(model.log == ["onValue 20", "onResult 20", "map", "signal 1", "flatMap", "always"])
        #expect(model.everyEntryWasOnTheMainLoop)

        let failed = Future<Int>(error: FutureError.aborted).onError(on: .mainActor) { _ in model.log.append("onError") }
        _ = try? await failed.get()
        let pending = Future<Int>(.forever).onCancel(on: .mainActor) { model.log.append("onCancel") }
        pending.cancel()
        await Task.yield()
        #expect(model.log.suffix(2) == ["onError", "onCancel"])
    }
}

/// Main-actor state of the kind Swift 6 code keeps: not `Sendable`, only reachable from the main actor.
@MainActor
final class MainActorModel {
    var log: [String] = [] {
        didSet { everyEntryWasOnTheMainLoop = everyEntryWasOnTheMainLoop && Scheduler.main.isExecuting }
    }
    private(set) var everyEntryWasOnTheMainLoop = true
}
