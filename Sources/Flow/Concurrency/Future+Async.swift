import Synchronization

extension Future {
    /// Waits for the future and returns its value, or throws its error.
    ///
    /// Cancellation belongs to the future's owner, not to its waiters. If the awaiting task is
    /// cancelled, this waiter stops waiting with `CancellationError` and the future keeps running for
    /// its other observers. Use ``getCancellingFuture()`` when the awaiting task owns the future.
    ///
    /// ```swift
    /// let user = try await fetchUser(id: 42).get()
    /// ```
    ///
    /// The wait runs on the caller's executor. While a main-actor caller waits, the main loop is kept
    /// alive until the caller runs again, so ``EventLoop/run()`` does not return before a `@MainActor`
    /// task has its result.
    public final nonisolated(nonsending) func get() async throws -> Value {
        try await wait(cancellingFuture: false)
    }

    /// Waits for the future like ``get()``; if the awaiting task is cancelled, also cancels the
    /// future (which, like ``cancel()``, is ignored while other continuations observe it).
    public final nonisolated(nonsending) func getCancellingFuture() async throws -> Value {
        try await wait(cancellingFuture: true)
    }

    private nonisolated(nonsending) func wait(cancellingFuture: Bool) async throws -> Value {
        if let result { return try result.get() }
        let waiter = AsyncWaiter<Value>()
        // A main-actor waiter is main-loop work still to come: `run()` must not return before it has
        // run again.
        let isMainActorWait = EventLoop.beginMainActorWait(#isolation)
        defer { EventLoop.endMainActorWait(isMainActorWait) }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                waiter.setContinuation(continuation)
                addListener(waiter)
            }
        } onCancel: {
            guard waiter.resume(with: .failure(CancellationError())) else { return }
            if removeListener(ObjectIdentifier(waiter)), cancellingFuture {
                cancel()
            }
        }
    }

    /// Creates a future that runs `operation` in a task and completes with what it returns or throws.
    /// Cancelling the future cancels the task. Made in a loop's context, the task holds that loop until
    /// it has completed the future: ``EventLoop/run()`` waits for its result.
    ///
    /// ```swift
    /// let page = Future { try await client.get("/index.html") }
    /// let onLoop = Future(on: loop.scheduler) { await table.snapshot() }   // the task prefers the loop
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: for a loop scheduler, the task prefers that loop as its executor, so its
    ///     nonisolated code runs on the loop; otherwise the task runs on the default executor.
    ///   - file: where the returned future was created, for descriptions and abandonment errors (debug
    ///     builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - operation: the asynchronous work; what it returns or throws is the future's result.
    @preconcurrency
    public convenience init(
        on scheduler: Scheduler = .current,
        file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @Sendable () async throws -> Value
    ) {
        self.init(on: .none, file: file, line: line, operationWithMover: { completion, _ in
            // The task's result may come back to the loop that started it: the loop's run() waits for
            // it (see EventLoop+Deliveries.swift).
            let origin = ThreadContext.current.loopAwaitingDelivery
            origin?.beginDelivery()
            let body: @Sendable () async -> Void = {
                do {
                    completion(.success(try await operation()))
                } catch {
                    completion(.failure(error))
                }
                origin?.endDelivery()
            }
            let task = if let loop = scheduler.eventLoop {
                Task(executorPreference: loop, operation: body)
            } else {
                Task(operation: body)
            }
            return TaskCancellation(task: task)
        })
    }
}

/// Cancels a task when disposed.
private struct TaskCancellation: Disposable {
    let task: Task<Void, Never>
    func dispose() { task.cancel() }
}

/// One `await` on a future: resumed exactly once, by the result or by the task's cancellation.
private final class AsyncWaiter<Value: Sendable>: FutureListener, Sendable {
    private enum State {
        case waiting
        case suspended(CheckedContinuation<Value, Error>)
        case earlyResult(Result<Value>)
        case resumed
    }

    private let state = Locked(State.waiting)

    func setContinuation(_ continuation: CheckedContinuation<Value, Error>) {
        let early = state.withLock { state -> Result<Value>? in
            switch state {
            case .waiting:
                state = .suspended(continuation)
                return nil
            case .earlyResult(let result):
                state = .resumed
                return result
            case .suspended, .resumed:
                return nil
            }
        }
        if let early { continuation.resume(with: early) }
    }

    /// - Returns: whether this call resumed (or will resume) the waiter.
    @discardableResult
    func resume(with result: Result<Value>) -> Bool {
        let continuation = state.withLock { state -> CheckedContinuation<Value, Error>?? in
            switch state {
            case .waiting:
                state = .earlyResult(result)
                return .some(nil)
            case .suspended(let continuation):
                state = .resumed
                return .some(continuation)
            case .earlyResult, .resumed:
                return nil
            }
        }
        guard let continuation else { return false }
        continuation?.resume(with: result)
        return true
    }

    func futureDidComplete(_ result: Result<Value>) {
        resume(with: result)
    }
}

/// Whether `isolation` is the main actor. A function of its own: the same comparison written inline in
/// a `nonisolated(nonsending)` function crashes Swift 6.3.1's optimiser in release builds (LLVM's
/// verifier: "PHINode should have one entry for each predecessor of its parent basic block").
@inline(never)
func isMainActorIsolation(_ isolation: (any Actor)?) -> Bool {
    isolation === MainActor.shared
}
