import Flow

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
    ///   - file: where the returned future was created, for descriptions and abandonment errors (debug
    ///     builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - predicate: whether to repeat after an error; runs on the current scheduler.
    ///   - onRetry: told of each re-run once decided, before its wait: its number (from 1), the delay
    ///     the backoff chose, and the error, on the current scheduler after `predicate`.
    ///
    /// ```swift
    /// fetch().onErrorRepeat(backoff: .exponential(initial: 0.1, maximum: 5), maxRepetitions: 5, onRetry: { retry in
    ///     log("attempt \(retry.number) failed: \(retry.error); retrying in \(Int(retry.delay * 1000)) ms")
    /// })
    /// ```
    @preconcurrency
    @discardableResult
    public final func onErrorRepeat(
        backoff: Backoff,
        maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Error) -> Bool = { _ in true },
        onRetry: @escaping @Sendable (RetryAttempt) -> Void
    ) -> Future<Value> {
        onErrorRepeat(
            maxRepetitions: maxRepetitions, delayBeforeRepetition: { backoff.delay(forAttempt: $0) },
            file: file, line: line, when: predicate, onRetry: onRetry)
    }

    /// `onErrorRepeat(backoff:maxRepetitions:file:line:when:onRetry:)` without a retry hook.
    ///
    /// - Parameters:
    ///   - backoff: the wait before each re-run.
    ///   - maxRepetitions: re-runs allowed after the first execution (nil: no limit).
    ///   - file: where the returned future was created, for reports (debug builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - predicate: whether to repeat after an error; runs on the current scheduler.
    @preconcurrency
    @discardableResult
    public final func onErrorRepeat(
        backoff: Backoff,
        maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Error) -> Bool = { _ in true }
    ) -> Future<Value> {
        // Re-run number n waits backoff.delay(forAttempt: n) on the current scheduler's timer; a
        // repetition of this future as a whole starts counting again from 1.
        onErrorRepeat(
            maxRepetitions: maxRepetitions, delayBeforeRepetition: { backoff.delay(forAttempt: $0) },
            file: file, line: line, when: predicate)
    }
}
