import Flow
import FlowTesting
import FlowTimers
import Testing

@Suite("onErrorRepeat with backoff")
struct RetryBackoffTests {
    struct Unavailable: Error {}
    struct Forbidden: Error {}

    /// An operation that records the virtual time of every execution and fails until `succeedOnAttempt`.
    private func job(
        on scheduler: Scheduler, clock: VirtualTimeScheduler, attempts: Recorder<Int64>,
        succeedOnAttempt: Int = .max, failure: @escaping @Sendable () -> Error = { Unavailable() }
    ) -> Future<String> {
        Future<String>(on: scheduler) { completion in
            attempts.append(clock.nowMilliseconds)
            completion(attempts.count >= succeedOnAttempt ? .success("done") : .failure(failure()))
            return NilDisposer()
        }
    }

    @Test("a failing job retries with exponential backoff at exact virtual times, over ten minutes")
    func exponentialBackoffOverTenMinutes() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let attempts = Recorder<Int64>()
        let outcome = Recorder<(Result<String>, Int64)>()
        _ = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: attempts)
                .onErrorRepeat(backoff: .exponential(initial: 1, maximum: 120), maxRepetitions: 12)
                .onResult { outcome.append(($0, clock.nowMilliseconds)) }
        }
        #expect(clock.runUntilIdle())
        // Waits of 1, 2, 4 … 64 s, then 120 s (the cap) five times.
        let expectedSeconds: [Int64] = [0, 1, 3, 7, 15, 31, 63, 127, 247, 367, 487, 607, 727]
        #expect(attempts.values == expectedSeconds.map { $0 * 1000 })
        #expect(outcome.count == 1)
        #expect(outcome.values.first?.0.error is Unavailable)
        #expect(outcome.values.first?.1 == 727_000)
        #expect(clock.now == .seconds(727))
    }

    @Test("the retry stops at the first success")
    func stopsAtFirstSuccess() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let attempts = Recorder<Int64>()
        let outcome = Recorder<Result<String>>()
        _ = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: attempts, succeedOnAttempt: 4)
                .onErrorRepeat(backoff: .linear(initial: 10, increment: 5), maxRepetitions: 10)
                .onResult { outcome.append($0) }
        }
        clock.runUntilIdle()
        #expect(attempts.values == [0, 10_000, 25_000, 45_000])
        #expect(outcome.values.first?.value == "done")
        #expect(clock.pendingCount == 0)
    }

    @Test("jittered waits follow the injected randomness")
    func jitterWithInjectedRandomness() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let attempts = Recorder<Int64>()
        let backoff = Backoff.exponential(initial: 2, maximum: 100, jitter: .full, random: RandomSource { 0.25 })
        _ = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: attempts)
                .onErrorRepeat(backoff: backoff, maxRepetitions: 3)
        }
        clock.runUntilIdle()
        // A quarter of 2, 4 and 8 seconds.
        #expect(attempts.values == [0, 500, 1500, 3500])
    }

    @Test("an error the predicate rejects ends the retries with that error")
    func predicateStopsRetrying() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let attempts = Recorder<Int64>()
        let outcome = Recorder<Result<String>>()
        _ = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: attempts,
                failure: { attempts.count >= 3 ? Forbidden() as Error : Unavailable() })
                .onErrorRepeat(backoff: .constant(5)) { !($0 is Forbidden) }
                .onResult { outcome.append($0) }
        }
        clock.runUntilIdle()
        #expect(attempts.values == [0, 5000, 10_000])
        #expect(outcome.values.first?.error is Forbidden)
    }

    @Test("cancelling during a backoff wait stops the timer and runs nothing more")
    func cancelDuringWait() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let attempts = Recorder<Int64>()
        let retrying = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: attempts)
                .onErrorRepeat(backoff: .constant(60))
        }
        clock.advance(by: .seconds(90))
        #expect(attempts.values == [0, 60_000])
        retrying.cancel()
        #expect(clock.pendingCount == 0)
        clock.advance(by: .seconds(600))
        #expect(attempts.values == [0, 60_000])
        #expect(retrying.result?.error as? FutureError == .aborted)
    }
}
