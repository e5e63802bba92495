extension Future {
    /// A future that completes like this one, `delay` seconds later, on the current scheduler's timer.
    /// A nil delay gives a new future completing with this one at once, as in Flow; a delay of zero
    /// (or less, which counts as zero) still waits for the timer's next turn, as in Flow; a delay
    /// that is not a number (or infinite) stops the program with a message.
    ///
    /// ```swift
    /// fetch().delay(by: 0.3).onValue { show($0) }
    /// ```
    @discardableResult
    public final func delay(by delay: Double?) -> Future<Value> {
        // A new future even without a delay: cancelling it must not cancel this one for its other
        // observers.
        guard let delay else { return onResult(on: .none) { _ in } }
        return self.delay(on: .current) { _ in delay }
    }

    /// A future that completes like this one, after the delay `delay` gives for its result (nil: none;
    /// zero or less: the timer's next turn), on `scheduler`'s timer.
    @preconcurrency
    @discardableResult
    public final func delay(on scheduler: Scheduler = .current, by delay: @escaping @Sendable (Result<Value>) -> Double?) -> Future<Value> {
        flatMapResult(on: .none) { result in
            guard let seconds = delay(result) else { return Future(result: result) }
            misusePrecondition(!seconds.isNaN, "Future.delay: the delay must be a finite number of seconds, not nan")
            // Failing if abandoned: closing the loop releases its timers uncalled.
            return Future.failingIfAbandoned(on: .none) { completion in
                scheduler.async(after: seconds) { completion(result) }
            }
        }
    }

    /// A future that completes like this one, or with `value` if this one has not completed within
    /// `timeout` seconds; then this future is cancelled (unless others observe it). A timeout.
    ///
    /// ```swift
    /// loadAvatar().replace(with: placeholder, after: 2)
    /// ```
    @discardableResult
    public final func replace(with value: Value, after timeout: Double) -> Future<Value> {
        completing(with: .success(value), after: timeout)
    }

    /// A future that completes like this one, or with `result` if this one has not completed within
    /// `timeout` seconds; then this future is cancelled (unless others observe it).
    ///
    /// ```swift
    /// request().replace(with: .failure(RequestTimedOut()), after: 5)
    /// ```
    @discardableResult
    public final func replace(with result: Result<Value>, after timeout: Double) -> Future<Value> {
        completing(with: result, after: timeout)
    }

    /// A future that completes like this one, or succeeds with `value` if this one has not completed
    /// within `timeout` seconds.
    @discardableResult
    public final func succeed(with value: Value, after timeout: Double) -> Future<Value> {
        completing(with: .success(value), after: timeout)
    }

    /// A future that completes like this one, or fails with `error` if this one has not completed within
    /// `timeout` seconds; then this future is cancelled (unless others observe it).
    ///
    /// ```swift
    /// request().fail(with: RequestTimedOut(), after: 5)
    /// ```
    @discardableResult
    public final func fail(with error: Error, after timeout: Double) -> Future<Value> {
        completing(with: .failure(error), after: timeout)
    }

    private func completing(with result: Result<Value>, after timeout: Double) -> Future<Value> {
        let scheduler = Scheduler.current
        let deadline = Future.failingIfAbandoned(on: .none) { completion in
            scheduler.async(after: timeout) { completion(result) }
        }
        return Flow.select(between: [self, deadline])
    }

    /// Runs `work` while this future is pending (after `delay` seconds, if given and the future is
    /// still pending then), and disposes what it returns, on `scheduler`, once the future completes or
    /// the returned future is cancelled.
    ///
    /// Without a delay the work always runs, even for a future that has already completed (then its
    /// disposable is disposed at once), as in Flow. With a delay it runs only if the future is still
    /// pending when the delay is over.
    ///
    /// ```swift
    /// download.performWhile(delayBy: 0.5) { spinner.show(); return Disposer { spinner.hide() } }
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: where `work` runs and its disposable is disposed, and whose timer measures
    ///     `delay`.
    ///   - delay: seconds to wait before running `work`; nil (the default) runs it at once.
    ///   - work: starts something, and returns how to stop it.
    /// - Returns: a future completing like this one. Repeating it runs this future's operation, and
    ///   `work`, again.
    @preconcurrency
    @discardableResult
    public final func performWhile(
        on scheduler: Scheduler = .current, delayBy delay: Double? = nil,
        _ work: @escaping @Sendable () -> Disposable
    ) -> Future<Value> {
        Future(observingOn: .none, file: #fileID, line: #line, operationWithMover: { completion, mover in
            // What the work started, undone when this future ends; nil once it has ended, so that
            // work started after that (a start racing the completion) is undone at once.
            let startedWork = Locked<DisposeBag?>(DisposeBag())
            let perform: @Sendable () -> Void = {
                let started = work()
                let undo = Disposer { scheduler.async { started.dispose() } }
                let kept = startedWork.withLock { bag -> Bool in
                    bag?.add(undo)
                    return bag != nil
                }
                if !kept { undo.dispose() }
            }
            let observation = mover.moveInside(self).onResult(on: .none) { completion($0) }.disposable
            let start: Disposable
            if let delay {
                start = scheduler.async(after: delay) {
                    if startedWork.withLock({ $0 != nil }) { perform() }
                }
            } else {
                scheduler.async(execute: perform)
                start = NilDisposer()
            }
            return Disposer {
                observation.dispose()
                start.dispose()
                startedWork.withLock { bag -> DisposeBag? in
                    defer { bag = nil }
                    return bag
                }?.dispose()
            }
        })
    }
}
