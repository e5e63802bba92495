extension Future {
    /// A future with `transform` applied to this future's value; an error passes through, and an error
    /// thrown by `transform` becomes the new future's failure.
    ///
    /// ```swift
    /// let json: Future<JSON> = data(at: url).map { data in try JSON(data) }
    /// ```
    @preconcurrency
    @inlinable
    @discardableResult
    public final func map<Other>(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ transform: consuming @escaping @Sendable (Value) throws -> Other
    ) -> Future<Other> {
        ChainedFuture.make(
            self, scheduler.identity, .map(consume scheduler, consume transform), file: file, line: line)
    }

    /// A future with `transform` applied to this future's result, success or failure.
    @preconcurrency
    @inlinable
    @discardableResult
    public final func mapResult<Other>(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ transform: consuming @escaping @Sendable (Result<Value>) throws -> Other
    ) -> Future<Other> {
        ChainedFuture.make(
            self, scheduler.identity, .mapResult(consume scheduler, consume transform), file: file, line: line)
    }

    /// A future that completes like the future `transform` returns for this future's value: chains two
    /// asynchronous operations. An error passes through.
    ///
    /// ```swift
    /// user(at: userURL).flatMap { user in friends(at: user.friendsURL) }
    /// ```
    @preconcurrency
    @inlinable
    @discardableResult
    public final func flatMap<Other>(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ transform: consuming @escaping @Sendable (Value) throws -> Future<Other>
    ) -> Future<Other> {
        ChainedFuture.make(
            self, scheduler.identity, .flatMap(consume scheduler, consume transform), file: file, line: line)
    }

    /// A future that completes like the future `transform` returns for this future's result.
    @preconcurrency
    @inlinable
    @discardableResult
    public final func flatMapResult<Other>(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ transform: consuming @escaping @Sendable (Result<Value>) throws -> Future<Other>
    ) -> Future<Other> {
        ChainedFuture.make(
            self, scheduler.identity, .flatMapResult(consume scheduler, consume transform), file: file, line: line)
    }

    /// A future that recovers from this future's error with the value `transform` returns (or fails
    /// with the error it throws). A value passes through.
    ///
    /// ```swift
    /// cachedAvatar().mapError { _ in placeholderAvatar }
    /// ```
    @preconcurrency
    @inlinable
    @discardableResult
    public final func mapError(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ transform: consuming @escaping @Sendable (Error) throws -> Value
    ) -> Future<Value> {
        ChainedFuture<Value, Value>.make(
            self, scheduler.identity, .mapError(consume scheduler, consume transform), file: file, line: line)
    }

    /// A future that recovers from this future's error with the future `transform` returns. A value
    /// passes through.
    @preconcurrency
    @inlinable
    @discardableResult
    public final func flatMapError(
        on scheduler: consuming Scheduler = .current, file: StaticString = #fileID, line: UInt = #line,
        _ transform: consuming @escaping @Sendable (Error) throws -> Future<Value>
    ) -> Future<Value> {
        ChainedFuture<Value, Value>.make(
            self, scheduler.identity, .flatMapError(consume scheduler, consume transform), file: file, line: line)
    }

    /// A future of `()` that completes when this one does, with its error if any.
    @inlinable
    @discardableResult
    public final func toVoid() -> Future<Void> {
        ChainedFuture.make(self, Scheduler.none.identity, .map(.none) { _ in () }, file: #fileID, line: #line)
    }

    /// A future that completes like this one, but whose cancellation does not reach this one: cancelling
    /// it (or what follows it) ends it with ``FutureError/aborted`` and leaves this future's operation
    /// running to completion, as in Flow.
    ///
    /// ```swift
    /// save(draft).ignoreCanceling().onValue { showSaved() }   // leaving the screen never stops a save
    /// ```
    @inlinable
    @discardableResult
    public final func ignoreCanceling() -> Future<Value> {
        Future(observingOn: .none, file: #fileID, line: #line, operationWithMover: { completion, mover in
            // The continuation stays on this future until it completes; the operation's disposable
            // does nothing, so a cancellation stops here.
            mover.moveInside(self).onResult(on: .none) { completion($0) }
            return NilDisposer()
        })
    }

    /// A future that first runs `body` with this future's value and waits for the future it returns,
    /// then completes with this future's value (or the first error).
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onValuePassItThrough<Other>(
        on scheduler: Scheduler = .current, _ body: @escaping @Sendable (Value) throws -> Future<Other>
    ) -> Future<Value> {
        flatMap(on: scheduler) { value in try body(value).map(on: .none) { _ in value } }
    }

    /// A future that first runs `body` with this future's error and waits for the future it returns,
    /// then fails with this future's error (or the first error `body` produced).
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onErrorPassItThrough<Other>(
        on scheduler: Scheduler = .current, _ body: @escaping @Sendable (Error) throws -> Future<Other>
    ) -> Future<Value> {
        flatMapError(on: scheduler) { error in try body(error).flatMap(on: .none) { _ in Future(error: error) } }
    }

    /// A future that first runs `body` with this future's result and waits for the future it returns,
    /// then completes with this future's result (or the error `body` produced).
    @preconcurrency
    @inlinable
    @discardableResult
    public final func onResultPassItThrough<Other>(
        on scheduler: Scheduler = .current, _ body: @escaping @Sendable (Result<Value>) throws -> Future<Other>
    ) -> Future<Value> {
        flatMapResult(on: scheduler) { result in try body(result).flatMap(on: .none) { _ in Future(result: result) } }
    }
}
