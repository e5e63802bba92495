import Flow

/// Counts work in progress (open connections, requests being answered) so that a graceful shutdown can
/// wait until it is all done.
///
/// ```swift
/// let work = InFlightWork()
/// let listener = try TCPListener.listen(port: 8080, on: loop) { connection in
///     let token = work.begin()
///     serve(connection).always { token.dispose() }
/// }
/// // At shutdown:
/// work.whenIdle().onValue { print("all connections finished") }
/// ```
public final class InFlightWork: Sendable {
    private struct State {
        var count = 0
        var idleWaiters: [@Sendable (Flow.Result<Void>) -> Void] = []
    }

    private let state = Locked(State())

    /// Creates a counter with no work in progress.
    public init() {}

    /// How much work is in progress.
    public var count: Int { state.withLock { $0.count } }

    /// Counts one more piece of work in progress, until the returned disposable is disposed (once;
    /// disposing it again does nothing).
    public func begin() -> Disposable {
        state.withLock { $0.count += 1 }
        return Disposer { [self] in end() }
    }

    /// A future that completes once no work is in progress: at once if none is.
    public func whenIdle() -> Flow.Future<Void> {
        Flow.Future<Void>(on: .none) { [self] completion in
            let isIdle = state.withLock { state -> Bool in
                guard state.count > 0 else { return true }
                state.idleWaiters.append(completion)
                return false
            }
            if isIdle { completion(.success(())) }
            return NilDisposer()
        }
    }

    private func end() {
        let waiters = state.withLock { state -> [@Sendable (Flow.Result<Void>) -> Void] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.idleWaiters = [] }
            return state.idleWaiters
        }
        // Called outside the lock: completing a future runs its observers.
        for waiter in waiters { waiter(.success(())) }
    }
}
