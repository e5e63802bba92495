import Flow
import Synchronization

extension Future {
    /// A future that runs this future's operation again when it fails, waiting as `backoff` says before
    /// each re-run, until it succeeds, `predicate` says no, or `maxRepetitions` re-runs have been made;
    /// it completes with the last result.
    ///
    /// Like `onErrorRepeat(delayBetweenRepetitions:maxRepetitions:when:)`, a repetition re-runs the whole
    /// upstream operation, and the waits are timers of the scheduler current when this is called (the
    /// loop's own timer on a loop, virtual time on a test clock). Re-run number *n* waits
    /// `backoff.delay(forAttempt: n)` seconds after the failure before it. Cancelling the returned future
    /// during a wait stops the timer: the operation does not run again.
    ///
    /// ```swift
    /// upload(report)
    ///     .timeout(after: 30)
    ///     .onErrorRepeat(backoff: .exponential(initial: 1, maximum: 60, jitter: .full), maxRepetitions: 8) { error in
    ///         !(error is AuthenticationError)
    ///     }
    /// ```
    ///
    /// - Parameters:
    ///   - backoff: the wait before each re-run.
    ///   - maxRepetitions: re-runs allowed after the first execution (nil: no limit).
    ///   - predicate: whether to repeat after an error; runs on the current scheduler.
    @discardableResult
    public final func onErrorRepeat(
        backoff: Backoff,
        maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Error) -> Bool = { _ in true }
    ) -> Future<Value> {
        let scheduler = Scheduler.current
        let waits = BackoffWaits()
        return onErrorRepeat(maxRepetitions: maxRepetitions, file: file, line: line) { error -> Future<Bool> in
            guard predicate(error) else { return Future<Bool>(false) }
            let delay = backoff.delay(forAttempt: waits.nextRepetition())
            return Future<Bool>(on: scheduler) { completion in
                let timer = scheduler.timer(after: delay) {
                    if !waits.isCancelled { completion(.success(true)) }
                }
                waits.track(timer)
                return timer
            }
        }
        // The repeating future does not cancel a pending decision that it listens to, so the wait is
        // stopped here, synchronously within `cancel()`, before its timer can start another run.
        .onCancel(on: .none) { waits.cancel() }
    }
}

/// The state shared by the waits of one `onErrorRepeat(backoff:)`: the repetition count (the predicate
/// is asked once per failure, and a `true` answer always leads to a re-run, so counting the waits counts
/// the re-runs) and the wait in progress, to stop it on cancellation.
private final class BackoffWaits: Sendable {
    private struct State {
        var repetitions = 0
        var isCancelled = false
        var currentWait: Disposable?
    }

    // Guarded by the mutex; the timer is disposed after it is released.
    private let state = Mutex(State())

    func nextRepetition() -> Int {
        state.withLock { state in
            state.repetitions += 1
            return state.repetitions
        }
    }

    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    func track(_ wait: Disposable) {
        let cancelled = state.withLock { state -> Bool in
            guard !state.isCancelled else { return true }
            state.currentWait = wait
            return false
        }
        if cancelled { wait.dispose() }
    }

    func cancel() {
        let wait = state.withLock { state -> Disposable? in
            state.isCancelled = true
            let taken = state.currentWait
            state.currentWait = nil
            return taken
        }
        wait?.dispose()
    }
}
