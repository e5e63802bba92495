import Deferred
import Dispatch
import Task
import XCTest

private enum TestError: Error, Equatable {
    case first
    case second
}

final class TaskTests: XCTestCase {
    func testPromiseSucceedsAndFails() {
        let promise = Task<Int>.Promise()
        XCTAssertTrue(promise.succeed(with: 1))
        XCTAssertFalse(promise.fail(with: TestError.first))
        XCTAssertEqual(try promise.peek()?.get(), 1)

        let failing = Task<Int>.Promise()
        failing.fail(with: TestError.first)
        XCTAssertThrowsError(try failing.peek()?.get())

        let void = Task<Void>.Promise()
        XCTAssertTrue(void.succeed())
    }

    func testUponSuccessAndUponFailureWithTheDefaultExecutor() {
        let promise = Task<Int>.Promise()
        let task = Task(promise)
        let succeeded = expectation(description: "uponSuccess")
        var value = 0
        task.uponSuccess { success in
            value = success
            succeeded.fulfill()
        }
        task.uponFailure { _ in XCTFail("uponFailure ran on a success") }
        promise.succeed(with: 4)
        wait(for: [succeeded], timeout: 10)
        XCTAssertEqual(value, 4)

        let failed = expectation(description: "uponFailure")
        var failure: Error?
        Task<Int>(failure: TestError.second).uponFailure { error in
            failure = error
            failed.fulfill()
        }
        wait(for: [failed], timeout: 10)
        XCTAssertEqual(failure as? TestError, .second)
    }

    func testAPromiseIsATask() {
        // TaskProtocol: a Deferred or Future of a task result has the task methods.
        let promise = Task<Int>.Promise()
        let doubled = promise.map(upon: .any()) { $0 * 2 }
        let future = Future<Task<Int>.Result>(value: .success(3))
        let viaFuture = future.andThen(upon: .any()) { value in Task(success: value + 1) }
        promise.succeed(with: 5)
        XCTAssertEqual(try doubled.wait(until: .now() + 10)?.get(), 10)
        XCTAssertEqual(try viaFuture.wait(until: .now() + 10)?.get(), 4)
        XCTAssertEqual(try promise.eraseToTask().wait(until: .now() + 10)?.get(), 5)
    }

    func testMapAndThenRecoverFallback() throws {
        let start = Task<Int>.Promise()
        let chain = Task(start)
            .map(upon: .any()) { value -> Int in
                if value < 0 { throw TestError.first }
                return value + 1
            }
            .andThen(upon: .any()) { value in Task<String>.async { "\(value)" } }
        start.succeed(with: 1)
        XCTAssertEqual(try chain.wait(until: .now() + 10)?.get(), "2")

        let recovered = Task<Int>(failure: TestError.first).recover(upon: .any()) { _ in 7 }
        XCTAssertEqual(try recovered.wait(until: .now() + 10)?.get(), 7)

        let fellBack = Task<Int>(failure: TestError.first).fallback(upon: .any()) { error -> Task<Int> in
            XCTAssertEqual(error as? TestError, .first)
            return Task(success: 8)
        }
        XCTAssertEqual(try fellBack.wait(until: .now() + 10)?.get(), 8)
    }

    func testEverySuccessAndIgnored() {
        let task = Task(success: 3)
        XCTAssertEqual(try task.everySuccess { $0 * 3 }.peek()?.get(), 9)
        XCTAssertNotNil(try task.ignored().peek()?.get())
    }

    func testAndSuccessOfUpToSevenOthers() {
        let one = Task(success: 1)
        XCTAssertEqual(try one.andSuccess(of: Task(success: "2")).wait(until: .now() + 10)?.get().1, "2")
        let all = one.andSuccess(
            of: Task(success: 2), Task(success: 3), Task(success: 4), Task(success: 5), Task(success: 6),
            Task(success: 7), Task(success: "eight"))
        let values = try? all.wait(until: .now() + 10)?.get()
        XCTAssertEqual(values?.0, 1)
        XCTAssertEqual(values?.6, 7)
        XCTAssertEqual(values?.7, "eight")

        let failing = one.andSuccess(of: Task<Int>(failure: TestError.second), Task(success: 3))
        XCTAssertThrowsError(try failing.wait(until: .now() + 10)?.get())
    }

    func testAllSucceeded() {
        let promises = (0 ..< 4).map { _ in Task<Int>.Promise() }
        let all = promises.allSucceeded()
        for (index, promise) in promises.enumerated() {
            promise.succeed(with: index)
        }
        XCTAssertEqual(try all.wait(until: .now() + 10)?.get(), [0, 1, 2, 3])

        let voids = [Task<Void>(success: ()), Task<Void>(failure: TestError.first)].allSucceeded()
        XCTAssertThrowsError(try voids.wait(until: .now() + 10)?.get())
    }

    func testAsyncWithOnCancelFailsWhenCancelledBeforeItStarts() {
        let queue = DispatchQueue(label: "deferred.compat.suspended")
        queue.suspend()
        var ran = false
        let task = Task<Int>.async(upon: queue, flags: [], onCancel: TestError.second) {
            ran = true
            return 1
        }
        task.cancel()
        queue.resume()
        XCTAssertThrowsError(try task.wait(until: .now() + 10)?.get()) { error in
            XCTAssertEqual(error as? TestError, .second)
        }
        queue.sync {}
        XCTAssertFalse(ran)
    }

    func testAsyncWithOnCancelRunsTheWork() {
        let task = Task<Int>.async(onCancel: TestError.first) { 41 + 1 }
        XCTAssertEqual(try task.wait(until: .now() + 10)?.get(), 42)
    }

    func testResultFromCocoaOptionals() {
        XCTAssertEqual(try Task<Int>.Result(value: 1, error: TestError.first).get(), 1)
        XCTAssertThrowsError(try Task<Int>.Result(value: nil, error: TestError.first).get()) { error in
            XCTAssertEqual(error as? TestError, .first)
        }
        XCTAssertThrowsError(try Task<Int>.Result(value: nil, error: nil).get())
        XCTAssertNoThrow(try Task<Void>.Result().get())
        XCTAssertEqual(try Task<Int>.Result(success: 2).get(), 2)
        XCTAssertThrowsError(try Task<Int>.Result(failure: TestError.first).get())
    }

    func testCreatingTasks() {
        let deferred = Deferred<Int>()
        let succeeds = Task(succeedsFrom: deferred)
        deferred.fill(with: 3)
        XCTAssertEqual(try succeeds.peek()?.get(), 3)

        XCTAssertEqual(try Task(catching: { 4 }).peek()?.get(), 4)
        XCTAssertThrowsError(try Task<Int>(catching: { throw TestError.first }).peek()?.get())
        XCTAssertEqual(try Task(success: 5).peek()?.get(), 5)
        XCTAssertNil(Task<Int>.never.wait(until: .now() + .milliseconds(10)))
    }

    func testNeverWithACancellationHandler() {
        var cancelled = 0
        let task = Task<Int>(.never) { cancelled += 1 }
        XCTAssertFalse(task.isCancelled)
        task.cancel()
        task.cancel()
        XCTAssertTrue(task.isCancelled)
        XCTAssertEqual(cancelled, 1)
        XCTAssertNil(task.peek())
    }

    func testCancellingACompositeCancelsItsParts() {
        var cancelled = [String]()
        let lock = NSLock()
        func record(_ name: String) {
            lock.lock()
            cancelled.append(name)
            lock.unlock()
        }
        let first = Task<Int>(.never) { record("first") }
        let mapped = first.map(upon: .any()) { $0 + 1 }
        mapped.cancel()
        XCTAssertEqual(cancelled, ["first"])
    }

    func testRepeat() {
        var attempts = 0
        let task = Task<Int>.repeat(upon: .any(), count: 3) {
            attempts += 1
            return attempts < 3 ? Task(failure: TestError.first) : Task(success: attempts)
        }
        XCTAssertEqual(try task.wait(until: .now() + 10)?.get(), 3)
    }

    func testDescription() {
        XCTAssertEqual(String(reflecting: Task<Int>.never), "Task(not filled)")
        XCTAssertTrue(String(reflecting: Task(success: 1)).hasPrefix("Task("))
    }

    func testEitherSpellingsAndFutureOfAResult() {
        let success = Task<Int>.Result(right: 1)
        let failure = Task<Int>.Result(left: TestError.first)
        XCTAssertEqual(success.withValues(ifLeft: { _ in 0 }, ifRight: { $0 }), 1)
        XCTAssertEqual(failure.withValues(ifLeft: { _ in 0 }, ifRight: { $0 }), 0)
        XCTAssertEqual(try Future<Task<Int>.Result>(success: 2).peek()?.get(), 2)
        XCTAssertThrowsError(try Future<Task<Int>.Result>(failure: TestError.second).peek()?.get())
        XCTAssertEqual(try Task(Future<Task<Int>.Result>(success: 3)).peek()?.get(), 3)
    }

    func testExecutorSeesEachStep() {
        let mapExecutor = CountingExecutor()
        let mapped: Task<String> = Task(success: 1).map(upon: mapExecutor) { _ in throw TestError.second }
        let mappedDone = expectation(description: "mapped")
        mapped.upon(mapExecutor) { result in
            XCTAssertEqual(result.error as? TestError, .second)
            mappedDone.fulfill()
        }
        wait(for: [mappedDone], timeout: 10)
        XCTAssertEqual(mapExecutor.submissions, 2)

        let recoverExecutor = CountingExecutor()
        let recovered = Task<Int>(failure: TestError.first).recover(upon: recoverExecutor) { _ in 42 }
        XCTAssertEqual(recovered.wait(until: .now() + 10)?.value, 42)
        XCTAssertEqual(recoverExecutor.submissions, 1)

        let fallbackExecutor = CountingExecutor()
        let fellBack = Task<Int>(failure: TestError.first).fallback(upon: fallbackExecutor) { _ in Task(success: 42) }
        XCTAssertEqual(fellBack.wait(until: .now() + 10)?.value, 42)
        XCTAssertEqual(fallbackExecutor.submissions, 2)

        let andThenExecutor = CountingExecutor()
        let cancelled = expectation(description: "the next task is cancelled")
        let chained: Task<String> = Task(success: 1).andThen(upon: andThenExecutor) { _ in
            Task(.never) { cancelled.fulfill() }
        }
        chained.cancel()
        wait(for: [cancelled], timeout: 10)
        XCTAssertEqual(andThenExecutor.submissions, 1)
    }
}
