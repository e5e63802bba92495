import Flow

// Bridges between this module's futures and Flow's: code can move from one library to the other one
// call at a time.

extension Flow.Future {
    /// A Flow future that succeeds with `future`'s value once it is filled.
    ///
    /// ```swift
    /// let friends = Flow.Future(deferred: fetchFriends(for: jimbob))
    /// ```
    @preconcurrency
    public convenience init<Wrapped: FutureProtocol>(deferred future: Wrapped) where Wrapped.Value == Value {
        self.init(on: .none) { completion in
            future.upon(Flow.Scheduler.none) { value in completion(.success(value)) }
            return NilDisposer()
        }
    }

    /// A Flow future that completes like `task`; cancelling it cancels the task.
    ///
    /// ```swift
    /// let profile = Flow.Future(task: loadProfileTask())
    /// ```
    public convenience init(task: Task<Value>) {
        self.init(on: .none) { completion in
            // The callback is let go of once the future is disposed: a cancelled task may never end,
            // and its `upon` handler would otherwise keep this future (whose operation holds the
            // task) alive for good.
            let callback = Locked<(@Sendable (Result<Value>) -> Void)?>(completion)
            task.upon(Flow.Scheduler.none) { result in callback.withLock { $0.take() }?(result) }
            return Disposer {
                let released = callback.withLock { $0.take() }
                _ = released
                task.cancel()
            }
        }
    }
}

extension Task {
    /// A task that completes like the Flow future. Cancelling the task cancels the future (unless
    /// others observe it) and fails the task with `FutureError.aborted`, the error of a
    /// cancelled Flow future, unless the future completed first.
    ///
    /// ```swift
    /// let task = Task(flowFuture)
    /// task.uponSuccess(on: .main) { value in show(value) }
    /// ```
    public convenience init(_ future: Flow.Future<Success>) {
        let outcome = Promise()
        // Cancelling the observer (the leaf) detaches it and so cancels the future too, unless others
        // observe it; `future.cancel()` would be ignored because of this very observer. The detached
        // observer never reports, so the cancellation fills the outcome itself.
        let observer = future.onResult(on: .none) { result in outcome.fill(with: result) }
        self.init(Future(outcome), uponCancel: {
            observer.cancelQuietly()
            outcome.fail(with: FutureError.aborted)
        })
    }
}

extension FutureProtocol {
    /// This future as a Flow future, which succeeds with its value once filled.
    public func asFlowFuture() -> Flow.Future<Value> {
        Flow.Future(deferred: self)
    }

    /// The value, once filled: waits without blocking a thread.
    ///
    /// ```swift
    /// let friends = await fetchFriends(for: jimbob).value
    /// ```
    ///
    /// The wait runs on the caller's executor. A main-actor caller's wait holds the main loop, so
    /// `EventLoop.main.run()` does not return before the caller has the value.
    public nonisolated(nonsending) var value: Value {
        get async {
            if let value = peek() { return value }
            let isMainActorWait = Flow.EventLoop.beginMainActorWait(#isolation)
            defer { Flow.EventLoop.endMainActorWait(isMainActorWait) }
            return await withCheckedContinuation { continuation in
                upon(Flow.Scheduler.none) { value in continuation.resume(returning: value) }
            }
        }
    }
}
