extension Future {
    /// A future that completes like this one, `delay` seconds later, on the current scheduler's timer.
    /// A nil delay returns this future; zero or less is no delay; a delay that is not a number
    /// (or infinite) stops the program with a message.
    ///
    /// ```swift
    /// fetch().delay(by: 0.3).onValue { show($0) }
    /// ```
    @discardableResult
    public final func delay(by delay: Double?) -> Future<Value> {
        guard let delay else { return self }
        return self.delay(on: .current) { _ in delay }
    }

    /// A future that completes like this one, after the delay `delay` gives for its result (nil: none),
    /// on `scheduler`'s timer.
    @discardableResult
    public final func delay(on scheduler: Scheduler = .current, by delay: @escaping @Sendable (Result<Value>) -> Double?) -> Future<Value> {
        flatMapResult(on: .none) { result in
            guard let seconds = delay(result) else { return Future(result: result) }
            misusePrecondition(!seconds.isNaN, "Future.delay: the delay must be a finite number of seconds, not nan")
            guard seconds > 0 else { return Future(result: result) }
            return Future(on: .none) { completion in
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
        let deadline = Future(on: .none) { completion in
            scheduler.async(after: timeout) { completion(result) }
        }
        return Flow.select(between: [self, deadline])
    }

    /// Runs `callback` on `scheduler` while this future is pending (after `delay` seconds, if given and
    /// the future is still pending then), and disposes what it returns once the future completes.
    ///
    /// ```swift
    /// download.performWhile(delayBy: 0.5) { spinner.show(); return Disposer { spinner.hide() } }
    /// ```
    @discardableResult
    public final func performWhile(
        on scheduler: Scheduler = .current, delayBy delay: Double? = nil,
        _ callback: @escaping @Sendable () -> Disposable
    ) -> Future<Value> {
        let performed = DisposeBag()
        let start: @Sendable () -> Void = { [self] in
            if !isCompleted { performed += callback() }
        }
        if let delay, delay > 0 {
            performed += scheduler.async(after: delay, execute: start)
        } else {
            scheduler.async(execute: start)
        }
        return always(on: scheduler) { performed.dispose() }
    }
}
