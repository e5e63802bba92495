import Flow
import FlowTesting
import FlowTimers
import Testing

@Suite("Future.timeout")
struct TimeoutTests {
    /// A future whose operation never completes by itself; it counts how often it was disposed and hands
    /// out its completion callback.
    private func pendingOperation(
        on scheduler: Scheduler, disposals: Shared<Int>, completion: Shared<(@Sendable (Result<Int>) -> Void)?>
    ) -> Future<Int> {
        Future<Int>(on: scheduler) { complete in
            completion.mutate { $0 = complete }
            return Disposer { disposals.mutate { $0 += 1 } }
        }
    }

    @Test("a future that is too slow fails with a TimeoutError and its operation is cancelled")
    func timeoutFailsAndCancelsTheOperation() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let disposals = Shared(0)
        let results = Recorder<(Result<Int>, Int64)>()
        let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
        pendingOperation(on: scheduler, disposals: disposals, completion: completion)
            .timeout(on: scheduler, after: 5)
            .onResult(on: scheduler) { results.append(($0, clock.nowMilliseconds)) }
        clock.advance(by: 4.999)
        #expect(results.count == 0)
        #expect(disposals.value == 0)
        clock.advance(by: 0.001)
        #expect(results.count == 1)
        #expect(results.values.first?.1 == 5000)
        #expect(results.values.first?.0.error as? TimeoutError == TimeoutError(delay: 5))
        #expect(disposals.value == 1)
        // The operation completing afterwards changes nothing.
        completion.value?(.success(1))
        clock.runUntilIdle()
        #expect(results.count == 1)
    }

    @Test("a timeout fails with the error given")
    func timeoutWithCustomError() {
        struct Slow: Error {}
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let results = Recorder<Result<Int>>()
        let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
        pendingOperation(on: scheduler, disposals: Shared(0), completion: completion)
            .timeout(on: scheduler, after: 1, error: Slow())
            .onResult(on: scheduler) { results.append($0) }
        clock.runUntilIdle()
        #expect(results.values.first?.error is Slow)
        // The operation ends late: its callback, which holds the cancelled future, is used up.
        completion.value?(.success(1))
    }

    @Test("a future completing in time keeps its result and stops the timer")
    func completingInTimeStopsTheTimer() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let disposals = Shared(0)
        let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
        let results = Recorder<(Result<Int>, Int64)>()
        pendingOperation(on: scheduler, disposals: disposals, completion: completion)
            .timeout(on: scheduler, after: 5)
            .onResult(on: scheduler) { results.append(($0, clock.nowMilliseconds)) }
        clock.advance(by: 2)
        scheduler.async { completion.value?(.success(42)) }
        clock.advance(by: .zero)
        #expect(results.values.first?.0.value == 42)
        #expect(results.values.first?.1 == 2000)
        #expect(clock.pendingCount == 0)
        #expect(disposals.value == 1)
        clock.runUntilIdle()
        #expect(results.count == 1)
    }

    @Test("a timeout does not cancel an operation others still observe")
    func sharedOperationSurvivesTheTimeout() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let disposals = Shared(0)
        let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
        let shared = pendingOperation(on: scheduler, disposals: disposals, completion: completion)
        let patient = Recorder<Result<Int>>()
        let impatient = Recorder<Result<Int>>()
        shared.onResult(on: scheduler) { patient.append($0) }
        shared.timeout(on: scheduler, after: 1).onResult(on: scheduler) { impatient.append($0) }
        clock.advance(by: 1)
        #expect(impatient.values.first?.error is TimeoutError)
        #expect(disposals.value == 0)
        scheduler.async { completion.value?(.success(7)) }
        clock.advance(by: .zero)
        #expect(patient.values.first?.value == 7)
    }

    @Test("cancelling the timed future cancels the operation and the timer")
    func cancellingTheTimedFuture() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let disposals = Shared(0)
        let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
        let timed = pendingOperation(on: scheduler, disposals: disposals, completion: completion)
            .timeout(on: scheduler, after: 5)
        clock.advance(by: 1)
        timed.cancel()
        #expect(disposals.value == 1)
        #expect(clock.pendingCount == 0)
        #expect(timed.result?.error as? FutureError == .aborted)
        // The operation ends late: its callback, which holds the cancelled future, is used up.
        completion.value?(.success(1))
    }
}
