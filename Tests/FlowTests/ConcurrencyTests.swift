import Dispatch
import Flow
import FlowTesting
import Testing

/// An actor whose isolated code runs on a loop.
actor LoopPinnedCounter {
    nonisolated let loop: EventLoop
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    private var count = 0

    init(loop: EventLoop) { self.loop = loop }

    /// Increments and reports whether this ran in the loop's context.
    func increment() -> (count: Int, onLoop: Bool) {
        count += 1
        return (count, loop.isInLoopContext)
    }
}

@Suite("Swift Concurrency", .checksLiveFutures)
struct ConcurrencyTests {
    @Test("await future.get() returns the value of a completed and of a pending future, and throws its error")
    func getReturnsTheResult() async throws {
        #expect(try await Future(5).get() == 5)
        let operation = Operation<String>(on: .none)
        DispatchQueue.global().async { operation.succeed("later") }
        #expect(try await operation.future.get() == "later")
        await #expect(throws: TestError.self) { try await Future<Int>(error: TestError()).get() }
    }

    @Test("a cancelled waiter stops with CancellationError; other waiters and observers are intact")
    func cancellingOneWaiter() async throws {
        let operation = Operation<Int>(on: .none)
        let observed = Shared<Int?>(nil)
        operation.future.onValue(on: .none) { value in observed.mutate { $0 = value } }
        let cancelled = Task { try await operation.future.get() }
        let patient = Task { try await operation.future.get() }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(!operation.future.isCompleted, "a waiter's cancellation does not cancel the future")
        operation.succeed(9)
        #expect(try await patient.value == 9)
        #expect(observed.value == 9)
    }

    @Test("getCancellingFuture cancels the future when the awaiting task is cancelled")
    func cancellingWaiterThatOwnsTheFuture() async {
        let operation = Operation<Int>(on: .none)
        let owner = Task { try await operation.future.getCancellingFuture() }
        owner.cancel()
        await #expect(throws: CancellationError.self) { try await owner.value }
        #expect(operation.future.result?.error as? FutureError == .aborted)
        #expect(operation.disposals.value == 1)
    }

    @Test("Future { try await ... } completes with the task's result, and cancelling it cancels the task")
    func futureFromAsyncWork() async throws {
        #expect(try await Future { 40 + 2 }.get() == 42)
        await #expect(throws: TestError.self) { try await Future<Int> { throw TestError() }.get() }
        // Awaited, not waited on with semaphores: a blocked test thread could starve the very
        // cooperative pool the task needs. The task reports its steps on a stream rather than through
        // futures: it keeps what it captured until it has returned, after the test saw its last step.
        let (steps, step) = AsyncStream.makeStream(of: String.self)
        let sawCancellation = Shared(false)
        var future: Future<Int>? = Future<Int> {
            step.yield("started")
            do {
                try await Task.sleep(for: .seconds(3600))
            } catch {
                sawCancellation.mutate { $0 = true }
            }
            step.yield("finished")
            return 0
        }
        var stepsSeen = steps.makeAsyncIterator()
        #expect(await stepsSeen.next() == "started")
        future?.cancel()
        #expect(await stepsSeen.next() == "finished")
        #expect(sawCancellation.value)
        #expect(future?.result?.error as? FutureError == .aborted)
        // The task holds the future until it has returned its value, just after "finished": the
        // suite's live-future check waits for it to let go.
        future = nil
    }

    @Test("an actor pinned to a loop runs its methods on the loop's thread")
    func actorOnLoop() async {
        let loop = EventLoop.startOnNewThread(name: "test.actor")
        defer { loop.shutdown() }
        let counter = LoopPinnedCounter(loop: loop)
        for expected in 1...100 {
            let (count, onLoop) = await counter.increment()
            #expect(count == expected)
            #expect(onLoop)
        }
        #expect(loop.isIsolatingCurrentContext() == false)
    }

    @Test("a task preferring a loop as its executor runs its nonisolated code on the loop")
    func taskExecutorPreference() async {
        let loop = EventLoop.startOnNewThread(name: "test.taskExecutor")
        defer { loop.shutdown() }
        let onLoop = await Task(executorPreference: loop) { loop.isInLoopContext }.value
        #expect(onLoop)
        let viaFuture = try? await Future(on: loop.scheduler) { loop.isInLoopContext }.get()
        #expect(viaFuture == true)
    }

    @Test("an async @main program that awaits futures scheduled on .main, with @MainActor code, finishes")
    func asyncMainProgram() throws {
        let run = try runProbe("", executable: "AsyncMainProbe")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.split(separator: "\n").map(String.init) == [
            "awaited 42",
            "main actor saw 42, on the main loop: true",
            "main actor saw 1, on the main loop: true",
            "done",
        ])
    }

    @Test("LoopBound gives its value in the loop's context")
    func loopBound() {
        withLoopOnOwnThread { loop in
            let seen = Shared<String?>(nil)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                let bound = LoopBound(NonSendableBox(text: "on the loop"), loop: loop)
                let box = LoopBoundBox(0, loop: loop)
                loop.execute {
                    box.value += 1
                    seen.mutate { $0 = "\(bound.value.text) \(box.value)" }
                    done.signal()
                }
            }
            expectSignal(done, "the loop")
            #expect(seen.value == "on the loop 1")
        }
    }

    @Test("LoopBound read off its loop stops the program with a message")
    func loopBoundOffLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = EventLoop.startOnNewThread(name: "bound")
            let bound = loop.scheduler.sync { LoopBoundBox(1, loop: loop) }
            _ = bound.value
        }
    }
}

/// A class that is not Sendable, for LoopBound.
final class NonSendableBox {
    var text: String
    init(text: String) { self.text = text }
}
