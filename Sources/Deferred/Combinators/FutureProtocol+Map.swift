import Dispatch

extension FutureProtocol {
    /// A future of `transform` applied to this future's value; `transform` runs once, on `executor`.
    ///
    /// ```swift
    /// let deferredInt: Future<Int?> = readString().map(upon: .any()) { Int($0) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `transform` runs; by default a concurrent background queue
    ///     (`DispatchQueue.any()`), wherever the caller runs.
    ///   - transform: makes the new value from this future's value.
    /// - Returns: a future filled with the transformed value.
    @inlinable
    @preconcurrency
    public func map<NewValue: Sendable>(
        upon executor: any Executor = defaultExecutor(),
        transform: @escaping @Sendable (Value) -> NewValue
    ) -> Future<NewValue> {
        let mapped = Deferred<NewValue>()
        upon(executor) { mapped.fill(with: transform($0)) }
        return Future(mapped)
    }

    /// A future of `transform` applied to this future's value; `transform` runs on `queue`.
    @inlinable
    @preconcurrency
    public func map<NewValue: Sendable>(
        upon queue: DispatchQueue,
        transform: @escaping @Sendable (Value) -> NewValue
    ) -> Future<NewValue> {
        map(upon: queue as any Executor, transform: transform)
    }

    /// Starts the next asynchronous step with this future's value, and gives that step's value, which
    /// is delivered through `executor` too: a custom executor sees every hop.
    ///
    /// ```swift
    /// let names: Future<[String]> = fetchFriends(for: jimbob).andThen(upon: .any()) { friends in
    ///     friends.map { fetchName(of: $0) }.allFilled()
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `start` runs and the next step's value arrives; by default a concurrent
    ///     background queue (`DispatchQueue.any()`), wherever the caller runs.
    ///   - start: begins the next step and returns its future.
    /// - Returns: a future filled with the next step's value.
    @inlinable
    @preconcurrency
    public func andThen<NewFuture: FutureProtocol>(
        upon executor: any Executor = defaultExecutor(),
        start: @escaping @Sendable (Value) -> NewFuture
    ) -> Future<NewFuture.Value> {
        let chained = Deferred<NewFuture.Value>()
        let reference = ExecutorReference(executor)
        upon(executor) { value in
            start(value).upon(reference.executor) { chained.fill(with: $0) }
        }
        return Future(chained)
    }

    /// Starts the next asynchronous step with this future's value, running `start` on `queue`.
    @inlinable
    @preconcurrency
    public func andThen<NewFuture: FutureProtocol>(
        upon queue: DispatchQueue,
        start: @escaping @Sendable (Value) -> NewFuture
    ) -> Future<NewFuture.Value> {
        andThen(upon: queue as any Executor, start: start)
    }

    /// A view of this future whose value is `transform` applied to this one's, recomputed every time
    /// it is read: by each ``FutureProtocol/upon(_:execute:)`` closure and each ``peek()``.
    ///
    /// For cheap projections, where storing a second value is not worth it.
    ///
    /// ```swift
    /// let count: Future<Int> = friends.every { $0.count }
    /// ```
    @inlinable
    @preconcurrency
    public func every<NewValue: Sendable>(per transform: @escaping @Sendable (Value) -> NewValue) -> Future<NewValue> {
        Future(LazyMapFuture(base: self, transform: transform))
    }

    /// A future that is filled, with nothing, when this one is: for those who care when, not what.
    ///
    /// ```swift
    /// func whenFriendsAreLoaded() -> Future<Void> {
    ///     deferredFriends.ignored()
    /// }
    /// ```
    @inlinable
    public func ignored() -> Future<Void> {
        every { _ in () }
    }
}

/// A future whose value is its base's, transformed at every read. See ``FutureProtocol/every(per:)``.
@usableFromInline
struct LazyMapFuture<Base: FutureProtocol, Value: Sendable>: FutureProtocol {
    @usableFromInline
    let base: Base

    @usableFromInline
    let transform: @Sendable (Base.Value) -> Value

    @inlinable
    init(base: Base, transform: @escaping @Sendable (Base.Value) -> Value) {
        self.base = base
        self.transform = transform
    }

    @inlinable
    func upon(_ executor: any Executor, execute body: @escaping @Sendable (Value) -> Void) {
        let transform = self.transform
        base.upon(executor) { body(transform($0)) }
    }

    @inlinable
    func peek() -> Value? {
        base.peek().map(transform)
    }

    @inlinable
    func wait(until time: DispatchTime) -> Value? {
        base.wait(until: time).map(transform)
    }
}
