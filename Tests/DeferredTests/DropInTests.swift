@testable import Deferred
import Dispatch
import Flow
import Synchronization
import Testing

/// Reaches `Task { async }` in a Deferred file, which warns on purpose, through a protocol: calling a
/// deprecated witness through a protocol does not warn.
protocol AsyncClosureTaskCheck: Sendable {
    func taskOfAsyncClosure(_ body: @escaping @Sendable () async throws -> Int) -> Task<Int>
    func taskOfAsyncClosureWithPriority(_ body: @escaping @Sendable () async throws -> Int) -> Task<Int>
    func swiftTaskHelpers() async throws
}

struct AsyncClosureTaskWitness: AsyncClosureTaskCheck {
    @available(*, deprecated)
    func taskOfAsyncClosure(_ body: @escaping @Sendable () async throws -> Int) -> Task<Int> {
        Task { try await body() }
    }

    @available(*, deprecated)
    func taskOfAsyncClosureWithPriority(_ body: @escaping @Sendable () async throws -> Int) -> Task<Int> {
        Task(priority: .high) { try await body() }
    }

    @available(*, deprecated)
    func swiftTaskHelpers() async throws {
        await Task.yield()
        try await Task.sleep(nanoseconds: 1_000)
        try await Task.sleep(for: .microseconds(1))
        try Task.checkCancellation()
    }
}

@Suite("Deferred drop-in: defaults, waiting on the main thread, Swift concurrency in Deferred files")
struct DropInTests {
    @Test("a default-executor upon runs on a background queue wherever it is called, a loop too")
    func defaultUponIsBackgroundOnALoop() {
        let loop = EventLoop.startOnNewThread(name: "dropin.default")
        defer { loop.shutdown() }
        let seen = Deferred<Bool>()
        let value = Deferred<Int>()
        loop.execute {
            value.upon { _ in seen.fill(with: loop.isInLoopContext) }
            value.fill(with: 1)
        }
        #expect(seen.wait(until: .now() + hangGuard) == false)
    }

    @MainActor
    @Test("waiting on the main queue for a value filled elsewhere blocks and returns, the main loop driven or not")
    func waitOnTheMainQueueReturns() {
        let deferred = Deferred<Int>()
        DispatchQueue.global().async { deferred.fill(with: 8) }
        #expect(deferred.wait(until: .now() + hangGuard) == 8)
    }

    @Test("Task { async } in a Deferred file runs the closure as Swift's task would and gives its outcome")
    func asyncClosureTask() async throws {
        // Waits by awaiting, not by blocking: the closures run on Swift's cooperative threads, which a
        // blocked test thread could starve.
        let check: any AsyncClosureTaskCheck = AsyncClosureTaskWitness()
        let task = check.taskOfAsyncClosure {
            await _Concurrency.Task.yield()
            return 6
        }
        #expect(try await task.value.get() == 6)

        let started = Deferred<Void>()
        let cancellable = check.taskOfAsyncClosure {
            started.fill()
            try await _Concurrency.Task.sleep(nanoseconds: 60_000_000_000)
            return 0
        }
        await started.value
        cancellable.cancel()
        let cancelledResult = await cancellable.value
        #expect(throws: CancellationError.self) { try cancelledResult.get() }

        let prioritised = check.taskOfAsyncClosureWithPriority { 7 }
        #expect(try await prioritised.value.get() == 7)
    }

    @Test("Task.sleep, Task.yield and Task.checkCancellation in a Deferred file reach Swift's")
    func swiftTaskHelpers() async throws {
        let check: any AsyncClosureTaskCheck = AsyncClosureTaskWitness()
        try await check.swiftTaskHelpers()
    }

    @Test("andThen hands the next step's value through its executor: every hop is submitted")
    func andThenHopsThroughTheExecutor() throws {
        let executor = CountingInlineExecutor()
        let next = Deferred<Int>()
        let chained = Deferred(filledWith: 1).andThen(upon: executor) { _ in next }
        next.fill(with: 2)
        #expect(chained.peek() == 2)
        #expect(executor.submissionCount == 2)

        let taskExecutor = CountingInlineExecutor()
        let nextTask = Task<Int>.Promise()
        let chainedTask = Task(success: 1).andThen(upon: taskExecutor) { _ in nextTask }
        nextTask.succeed(with: 3)
        #expect(try chainedTask.peek()?.get() == 3)
        #expect(taskExecutor.submissionCount == 2)
    }

    @Test("tasks over a value that is never filled are freed with their last reference, chained ones too")
    func neverFilledTasksAreFreed() {
        weak var weakPromise: Task<Int>.Promise?
        do {
            let promise = Task<Int>.Promise()
            weakPromise = promise
            let executor = CountingInlineExecutor()
            let task = Task(promise, uponCancel: { promise.fail(with: TestError()) })
            _ = Task(promise)
            _ = task.andThen(upon: executor) { Task(success: $0) }
            _ = task.fallback(upon: executor) { _ in Task(success: 0) }
            _ = task.map(upon: executor) { $0 }
            _ = task.andSuccess(of: Task(success: 1), Task(success: 2))
            _ = [task, Task(success: 3)].allSucceeded()
        }
        #expect(weakPromise == nil)
    }
}

/// The main-thread wait report goes through one global setting, so these run one at a time.
@Suite("Deferred drop-in: the main-thread wait report", .serialized)
struct MainThreadWaitReportTests {
    @MainActor
    @Test("a main-thread wait that holds up main-loop work says so after the report delay, and goes on waiting")
    func mainThreadWaitReportsHeldUpLoopWork() {
        let deferred = Deferred<Int>()
        // Submitted from the main context: it waits in the main loop, which this thread would run.
        EventLoop.main.execute { deferred.fill(with: 1) }
        let messages = Shared<[String]>([])
        let waited = MainThreadWaitReport.redirect(
            after: .milliseconds(20), to: { message in messages.mutate { $0.append(message) } }
        ) {
            deferred.wait(until: .now() + .milliseconds(200))
        }
        #expect(waited == nil)
        #expect(messages.value.count == 1)
        #expect(messages.value.first?.contains("holds work that only this thread runs") == true)
    }

    @MainActor
    @Test("a main-thread wait whose value arrives in time reports nothing")
    func waitFilledInTimeReportsNothing() {
        let deferred = Deferred<Int>()
        let messages = Shared<[String]>([])
        DispatchQueue.global().async { deferred.fill(with: 2) }
        let waited = MainThreadWaitReport.redirect(
            after: .seconds(20), to: { message in messages.mutate { $0.append(message) } }
        ) {
            deferred.wait(until: .now() + hangGuard)
        }
        #expect(waited == 2)
        #expect(messages.value.isEmpty)
    }
}
