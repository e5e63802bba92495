import Deferred
import Dispatch
import Testing

/// Runs what it is given only when the test says so, so that a test can act between a step's
/// submission and its run.
final class HeldExecutor: Executor, Sendable {
    private let held = Shared<[@Sendable () -> Void]>([])

    func submit(_ body: @escaping @Sendable () -> Void) {
        held.mutate { $0.append(body) }
    }

    /// Runs what was submitted, and what that submits, until nothing is left.
    func runAll() {
        while let next = held.mutate({ $0.isEmpty ? nil : $0.removeFirst() }) {
            next()
        }
    }
}

@Suite("Task: a cancel that comes before a chained step starts")
struct ChainCancellationTests {
    /// A task that finishes only when cancelled, counting its cancellations.
    private func cancellableStep(counting cancellations: Shared<Int>) -> Task<Int> {
        let outcome = Task<Int>.Promise()
        return Task(outcome, uponCancel: {
            cancellations.mutate { $0 += 1 }
            outcome.fail(with: TestError(code: -1))
        })
    }

    @Test("andThen: cancelled before its continuation runs, the next task is cancelled as it starts")
    func andThenCancelBeforeTheContinuation() throws {
        let executor = HeldExecutor()
        let cancellations = Shared(0)
        let chained = Task(success: 1).andThen(upon: executor) { _ in cancellableStep(counting: cancellations) }
        chained.cancel()
        executor.runAll()
        #expect(cancellations.value == 1)
        #expect(throws: TestError(code: -1)) { try chained.peek()?.get() }
    }

    @Test("fallback: cancelled before its continuation runs, the replacement is cancelled as it starts")
    func fallbackCancelBeforeTheContinuation() throws {
        let executor = HeldExecutor()
        let cancellations = Shared(0)
        let replaced = Task<Int>(failure: TestError()).fallback(upon: executor) { _ in
            cancellableStep(counting: cancellations)
        }
        replaced.cancel()
        executor.runAll()
        #expect(cancellations.value == 1)
        #expect(throws: TestError(code: -1)) { try replaced.peek()?.get() }
    }

    @Test("andThen: cancelled after the next task started, it cancels that task once")
    func andThenCancelAfterTheNextStarted() throws {
        let executor = HeldExecutor()
        let cancellations = Shared(0)
        let chained = Task(success: 1).andThen(upon: executor) { _ in cancellableStep(counting: cancellations) }
        executor.runAll()
        #expect(cancellations.value == 0)
        chained.cancel()
        chained.cancel()
        executor.runAll()
        #expect(cancellations.value == 1)
        #expect(throws: TestError(code: -1)) { try chained.peek()?.get() }
    }

    @Test("repeat: cancelled before the first attempt starts, that attempt is cancelled and none follows")
    func repeatCancelBeforeTheFirstAttempt() throws {
        let executor = HeldExecutor()
        let attempts = Shared(0)
        let cancellations = Shared(0)
        let repeated = Task<Int>.repeat(upon: executor, count: 3) {
            attempts.mutate { $0 += 1 }
            return cancellableStep(counting: cancellations)
        }
        repeated.cancel()
        executor.runAll()
        #expect(attempts.value == 1)
        #expect(cancellations.value == 1)
        #expect(throws: TestError(code: -1)) { try repeated.peek()?.get() }
    }

    @Test("repeat: cancelled during an attempt, it cancels that attempt and starts no other")
    func repeatCancelDuringAnAttempt() throws {
        let executor = HeldExecutor()
        let attempts = Shared(0)
        let cancellations = Shared(0)
        let repeated = Task<Int>.repeat(upon: executor, count: 3) {
            attempts.mutate { $0 += 1 }
            return cancellableStep(counting: cancellations)
        }
        executor.runAll()
        #expect(attempts.value == 1)
        repeated.cancel()
        executor.runAll()
        #expect(attempts.value == 1)
        #expect(cancellations.value == 1)
        #expect(throws: TestError(code: -1)) { try repeated.peek()?.get() }
    }

    @Test("chained tasks whose steps never finish are freed with their last reference, repeat's too")
    func neverFinishingStepsAreFreed() {
        let trackers = Shared<[WeakTracker]>([])
        /// A step that never finishes, whose cancellation handler holds a tracker.
        @Sendable func neverFinishingStep() -> Task<Int> {
            let tracker = LifetimeTracker()
            trackers.mutate { $0.append(WeakTracker(tracker)) }
            return Task(Task<Int>.Promise(), uponCancel: { withExtendedLifetime(tracker) {} })
        }
        do {
            let executor = HeldExecutor()
            _ = Task<Int>.repeat(upon: executor, count: 2) { neverFinishingStep() }
            _ = Task(success: 1).andThen(upon: executor) { _ in neverFinishingStep() }
            _ = Task<Int>(failure: TestError()).fallback(upon: executor) { _ in neverFinishingStep() }
            executor.runAll()
        }
        #expect(trackers.value.count == 3)
        #expect(trackers.value.allSatisfy { $0.tracker == nil })
    }
}

/// A weak reference to a tracker, to keep in a shared array.
struct WeakTracker: Sendable {
    weak let tracker: LifetimeTracker?

    init(_ tracker: LifetimeTracker) {
        self.tracker = tracker
    }
}
