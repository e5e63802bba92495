extension Future {
    /// Runs `callback` with the result once the future completes, on `scheduler`.
    ///
    /// - Returns: a future that completes with the same result once `callback` ran, or with the error
    ///   `callback` threw.
    ///
    /// ```swift
    /// session.data(at: url).onResult { result in
    ///     switch result {
    ///     case .success(let data): show(data)
    ///     case .failure(let error): report(error)
    ///     }
    /// }
    /// ```
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onResult(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ callback: consuming @escaping @Sendable (Result<Value>) throws -> Void
    ) -> Future<Value> {
        ChainedFuture<Value, Value>.make(
            self, scheduler.identity, .onResult(consume scheduler, consume callback), file: file, line: line)
    }

    /// Runs `callback` with the value if the future succeeds, on `scheduler`.
    ///
    /// - Returns: a future that completes with the same result once `callback` ran.
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onValue(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ callback: consuming @escaping @Sendable (Value) throws -> Void
    ) -> Future<Value> {
        ChainedFuture<Value, Value>.make(
            self, scheduler.identity, .onValue(consume scheduler, consume callback), file: file, line: line)
    }

    /// Runs `callback` with the error if the future fails (cancellation included), on `scheduler`.
    ///
    /// - Returns: a future that completes with the same result once `callback` ran.
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onError(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ callback: consuming @escaping @Sendable (Error) throws -> Void
    ) -> Future<Value> {
        ChainedFuture<Value, Value>.make(
            self, scheduler.identity, .onError(consume scheduler, consume callback), file: file, line: line)
    }

    /// Runs `callback` if the returned future is cancelled (directly, or because what follows it was),
    /// after the `onCancel` callbacks of the futures before it. A result, even a failure with
    /// ``FutureError/aborted``, does not run it.
    ///
    /// ```swift
    /// download(url).onCancel { print("download cancelled") }
    /// ```
    ///
    /// - Returns: a future that completes with the same result; cancelling it runs `callback` and
    ///   cancels this future unless others still observe it.
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onCancel(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ callback: consuming @escaping @Sendable () -> Void
    ) -> Future<Value> {
        ChainedFuture<Value, Value>.make(
            self, scheduler.identity, .onCancel(consume scheduler, consume callback), file: file, line: line)
    }

    /// Runs `callback` with the error if the future fails, or with nil if the returned future is
    /// cancelled.
    ///
    /// ```swift
    /// upload.onErrorOrCancel { error in spinner.stop(); if let error { show(error) } }
    /// ```
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onErrorOrCancel(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ callback: consuming @escaping @Sendable (Error?) -> Void
    ) -> Future<Value> {
        ChainedFuture<Value, Value>.make(
            self, scheduler.identity, .onErrorOrCancel(consume scheduler, consume callback), file: file, line: line)
    }

    /// Runs `callback` once the future completes in any way: with a value, with an error, or by the
    /// returned future being cancelled.
    ///
    /// ```swift
    /// spinner.start()
    /// load().always { spinner.stop() }
    /// ```
    @preconcurrency
    @inlinable
    @discardableResult
    public final func always(
        on scheduler: Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @Sendable () -> Void
    ) -> Future<Value> {
        onCancel(on: scheduler, file: file, line: line, callback)
            .onResult(on: scheduler, file: file, line: line) { _ in callback() }
    }
}
