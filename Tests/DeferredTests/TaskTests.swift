import Deferred
import Dispatch
import Testing

@Suite("Task")
struct TaskTests {
    private let inline = CountingInlineExecutor()

    @Test("succeed(with:) and fail(with:) fill the promise of an outcome once")
    func promiseOfOutcome() throws {
        let outcome = Deferred<Task<Int>.Result>()
        #expect(outcome.succeed(with: 1))
        #expect(!outcome.fail(with: TestError()))
        let task = Task(outcome)
        #expect(try task.peek()?.get() == 1)
    }

    @Test("uponSuccess runs only on success and uponFailure only on failure")
    func uponSuccessAndFailure() throws {
        let seen = Shared<[String]>([])
        Task(success: 1).uponSuccess(on: inline) { _ in seen.mutate { $0.append("success") } }
        Task(success: 1).uponFailure(on: inline) { _ in seen.mutate { $0.append("wrong") } }
        Task<Int>(failure: TestError()).uponFailure(on: inline) { _ in seen.mutate { $0.append("failure") } }
        Task<Int>(failure: TestError()).uponSuccess(on: inline) { _ in seen.mutate { $0.append("wrong") } }
        #expect(seen.value == ["success", "failure"])
    }

    @Test("map transforms a success, passes a failure on, and turns a thrown error into a failure")
    func map() throws {
        #expect(try Task(success: 2).map(upon: inline) { $0 * 10 }.peek()?.get() == 20)
        let failed = Task<Int>(failure: TestError(code: 1)).map(upon: inline) { $0 * 10 }
        #expect(throws: TestError(code: 1)) { try failed.peek()?.get() }
        let thrown = Task(success: 2).map(upon: inline) { _ -> Int in throw TestError(code: 2) }
        #expect(throws: TestError(code: 2)) { try thrown.peek()?.get() }
    }

    @Test("andThen starts the next task with the value and finishes as it does")
    func andThen() throws {
        let next = Deferred<Task<String>.Result>()
        let chained = Task(success: 1).andThen(upon: inline) { value in
            next.map(upon: CountingInlineExecutor()) { "\(value): \($0)" }
        }
        #expect(chained.peek() == nil)
        next.succeed(with: "one")
        #expect(try chained.peek()?.get() == "1: one")
        let skipped = Task<Int>(failure: TestError()).andThen(upon: inline) { _ -> Task<Int> in
            Issue.record("andThen started a task after a failure")
            return Task(success: 0)
        }
        #expect(throws: TestError.self) { try skipped.peek()?.get() }
    }

    @Test("recover replaces a failure with a value")
    func recover() throws {
        let recovered = Task<Int>(failure: TestError()).recover(upon: inline) { _ in 7 }
        #expect(try recovered.peek()?.get() == 7)
        #expect(try Task(success: 1).recover(upon: inline) { _ in 7 }.peek()?.get() == 1)
    }

    @Test("fallback starts another task after a failure")
    func fallback() throws {
        let replaced = Task<Int>(failure: TestError()).fallback(upon: inline) { _ in Task(success: 9) }
        #expect(try replaced.peek()?.get() == 9)
    }

    @Test("repeat retries a failing task up to count more times, then gives the last failure")
    func repeatUntilCountExhausted() throws {
        let attempts = Shared(0)
        let task = Task<Int>.repeat(upon: inline, count: 2) {
            let attempt = attempts.mutate { $0 += 1; return $0 }
            return Task(failure: TestError(code: attempt))
        }
        #expect(attempts.value == 3)
        #expect(throws: TestError(code: 3)) { try task.peek()?.get() }
    }

    @Test("repeat stops at the first success and when continuingIf says no")
    func repeatStops() throws {
        let attempts = Shared(0)
        let succeeding = Task<Int>.repeat(upon: inline, count: 5) {
            let attempt = attempts.mutate { $0 += 1; return $0 }
            return attempt == 2 ? Task(success: attempt) : Task(failure: TestError())
        }
        #expect(try succeeding.peek()?.get() == 2)
        let refusals = Shared(0)
        let refused = Task<Int>.repeat(upon: inline, count: 5, continuingIf: { _ in false }) {
            refusals.mutate { $0 += 1 }
            return Task(failure: TestError())
        }
        #expect(refusals.value == 1)
        #expect(throws: TestError.self) { try refused.peek()?.get() }
    }

    @Test("cancel runs the handler once, and the handler is released once the task finished")
    func cancelOnce() throws {
        let cancellations = Shared(0)
        let outcome = Deferred<Task<Int>.Result>()
        let task = Task(outcome, uponCancel: {
            cancellations.mutate { $0 += 1 }
            outcome.fail(with: TestError(code: -1))
        })
        task.cancel()
        task.cancel()
        #expect(cancellations.value == 1)
        #expect(task.isCancelled)
        #expect(throws: TestError(code: -1)) { try task.peek()?.get() }

        weak var weakTracker: LifetimeTracker?
        let finished = Deferred<Task<Int>.Result>()
        let finishing: Task<Int>
        do {
            let tracker = LifetimeTracker()
            weakTracker = tracker
            finishing = Task(finished, uponCancel: { withExtendedLifetime(tracker) {} })
        }
        #expect(weakTracker != nil)
        finished.succeed(with: 1)
        #expect(weakTracker == nil)
        finishing.cancel()
    }

    @Test("cancelling a derived task cancels the task it came from")
    func cancelPropagates() throws {
        let cancelled = Shared(false)
        let source = Task(Deferred<Task<Int>.Result>(), uponCancel: { cancelled.mutate { $0 = true } })
        source.map(upon: inline) { $0 + 1 }.andThen(upon: inline) { Task(success: $0) }.cancel()
        #expect(cancelled.value)
    }

    @Test("Task.async runs throwing work and gives its outcome")
    func async() throws {
        let task = Task<Int>.async(upon: .any()) { 5 }
        #expect(try task.wait(until: .now() + hangGuard)?.get() == 5)
        let failing = Task<Int>.async(upon: .any()) { throw TestError(code: 4) }
        #expect(throws: TestError(code: 4)) { try failing.wait(until: .now() + hangGuard)?.get() }
    }

    @Test("allSucceeded succeeds when all do, fails with the first failure, and cancels them all")
    func allSucceeded() throws {
        let outcomes = (0..<3).map { _ in Deferred<Task<Int>.Result>() }
        let cancellations = Shared(0)
        let tasks = outcomes.map { Task($0, uponCancel: { cancellations.mutate { $0 += 1 } }) }
        let all = tasks.allSucceeded()
        outcomes[0].succeed(with: 0)
        outcomes[1].succeed(with: 1)
        #expect(all.peek() == nil)
        outcomes[2].succeed(with: 2)
        #expect(throws: Never.self) { try all.peek()?.get() }

        let failing = [Task(success: 1), Task(failure: TestError(code: 8))].allSucceeded()
        #expect(throws: TestError(code: 8)) { try failing.peek()?.get() }

        let pending = (0..<2).map { _ in
            Task(Deferred<Task<Int>.Result>(), uponCancel: { cancellations.mutate { $0 += 1 } })
        }
        pending.allSucceeded().cancel()
        #expect(cancellations.value == 2)
        #expect([Task<Int>]().allSucceeded().isFilled)
    }

    @Test("andSuccess pairs two successes and fails with the first failure")
    func andSuccess() throws {
        let pair = Task(success: 1).andSuccess(of: Task(success: "a"))
        #expect(try pair.peek()?.get().1 == "a")
        let three = Task(success: 1).andSuccess(of: Task(success: "a"), Task(success: 2.5))
        #expect(try three.wait(until: .now() + hangGuard)?.get().2 == 2.5)
        let failed = Task(Deferred<Task<Int>.Result>()).andSuccess(of: Task<String>(failure: TestError(code: 3)))
        #expect(throws: TestError(code: 3)) { try failed.peek()?.get() }
    }

    @Test("andSuccess of 2 to 8 tasks puts each task's value in its task's position")
    func andSuccessKeepsPositions() throws {
        func task(_ value: Int) -> Task<Int> { Task(success: value) }
        func result<Success>(_ task: Task<Success>) throws -> Success {
            try #require(try task.wait(until: .now() + hangGuard)?.get())
        }
        let two = try result(task(0).andSuccess(of: task(1)))
        #expect([two.0, two.1] == [0, 1])
        let five = try result(task(0).andSuccess(of: task(1), task(2), task(3), task(4)))
        #expect([five.0, five.1, five.2, five.3, five.4] == [0, 1, 2, 3, 4])
        let eight = try result(task(0).andSuccess(of: task(1), task(2), task(3), task(4), task(5), task(6), task(7)))
        #expect([eight.0, eight.1, eight.2, eight.3, eight.4, eight.5, eight.6, eight.7] == Array(0..<8))
        let mixed = try result(task(0).andSuccess(of: Task(success: "one"), Task(success: 2.0)))
        #expect(mixed.0 == 0 && mixed.1 == "one" && mixed.2 == 2.0)
    }
}
