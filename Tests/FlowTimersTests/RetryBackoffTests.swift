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

    @Test("onRetry tells each retry's number, the backoff's delay and the error, before the wait, on virtual time")
    func onRetryReportsEachRetry() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let attempts = Recorder<Int64>()
        let retries = Recorder<(number: Int, delayMilliseconds: Int, error: String, at: Int64)>()
        let backoff = Backoff.exponential(initial: 0.12, maximum: 100, jitter: .full, random: RandomSource { 0.5 })
        _ = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: attempts, succeedOnAttempt: 4,
                failure: { attempts.count == 2 ? Forbidden() as Error : Unavailable() })
                .onErrorRepeat(backoff: backoff, maxRepetitions: 5, onRetry: { retry in
                    retries.append((retry.number, Int((retry.delay * 1000).rounded()), "\(type(of: retry.error))",
                                    clock.nowMilliseconds))
                })
        }
        clock.runUntilIdle()
        // Half of 120, 240 and 480 ms: each reported at the failure, before its wait.
        #expect(attempts.values == [0, 60, 180, 420])
        #expect(retries.values.map(\.number) == [1, 2, 3])
        #expect(retries.values.map(\.delayMilliseconds) == [60, 120, 240])
        #expect(retries.values.map(\.error) == ["Unavailable", "Forbidden", "Unavailable"])
        #expect(retries.values.map(\.at) == [0, 60, 180])
    }

    @Test("onRetry is not told of a failure that ends the repetition: the predicate's no, or the last allowed")
    func onRetrySilentWhenNotRetrying() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let attempts = Recorder<Int64>()
        let retries = Recorder<Int>()
        let outcome = Recorder<Result<String>>()
        _ = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: attempts)
                .onErrorRepeat(backoff: .constant(1), maxRepetitions: 2, onRetry: { retries.append($0.number) })
                .onResult { outcome.append($0) }
        }
        clock.runUntilIdle()
        #expect(attempts.count == 3)
        #expect(retries.values == [1, 2])
        #expect(outcome.values.first?.error is Unavailable)

        let rejected = Recorder<Int>()
        _ = scheduler.sync {
            job(on: scheduler, clock: clock, attempts: Recorder<Int64>(), failure: { Forbidden() })
                .onErrorRepeat(backoff: .constant(1), when: { !($0 is Forbidden) }, onRetry: { rejected.append($0.number) })
        }
        clock.runUntilIdle()
        #expect(rejected.values.isEmpty)
    }

    @Test("a retry describes itself for a log line")
    func retryDescription() {
        let retry = RetryAttempt(number: 3, delay: 0.24, error: Unavailable())
        #expect(retry.description == "retry 3 in 240 ms after: Unavailable()")
    }
}
