import Flow

extension Future {
    /// A future with this one's result, or failing with `error` (a ``TimeoutError`` by default) if this
    /// one has not completed `delay` seconds after the operation started; on a timeout this future is
    /// cancelled, which disposes its operation unless others still observe it.
    ///
    /// The limit is a one-shot timer on `scheduler` (the loop's own timer on a loop scheduler, virtual
    /// time on a test clock). Flow's `replace(with:after:)` is the counterpart that succeeds with a
    /// fallback value instead of failing. Repeating the returned future (`onErrorRepeat`) runs this
    /// future's operation again, with a fresh limit each time.
    ///
    /// ```swift
    /// fetchProfile()
    ///     .timeout(after: 10)
    ///     .onErrorRepeat(backoff: .exponential(initial: 1, maximum: 30), maxRepetitions: 3)
    ///     .onValue { profile in show(profile) }
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: where the timer runs and the result is delivered from.
    ///   - delay: seconds allowed; a negative delay counts as zero.
    ///   - error: the failure on a timeout; `nil` (the default) for a ``TimeoutError``.
    public final func timeout(
        on scheduler: Scheduler = .current,
        after delay: Double,
        error: (any Error)? = nil
    ) -> Future<Value> {
        let timeoutError = error ?? TimeoutError(delay: delay)
        return Future(on: scheduler) { completion, mover in
            // Moved inside so that a repetition of the returned future runs this one's operation again.
            let observation = mover.moveInside(self).onResult(on: scheduler) { result in completion(result) }
            // The timer as a future that fails if the timer is dropped uncalled (its loop closed), so
            // that the returned future ends with that error rather than waiting for good.
            let timer = Future<Void>.failingIfAbandoned(on: .none) { fired in
                scheduler.timer(after: delay) { fired(.success(())) }
            }
            .onResult(on: .none) { result in completion(.failure(result.error ?? timeoutError)) }
            // Disposed once the returned future completes or is cancelled: cancelling the timer's
            // future stops the timer, and cancelling the observation cancels this future unless
            // others observe it too.
            return Disposer {
                timer.cancelQuietly()
                observation.cancelQuietly()
            }
        }
    }
}
