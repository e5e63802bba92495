/// Runs one task at a time: while a task is running, asking for another one gives a future sharing
/// the running task's result instead of starting a new task.
///
/// ```swift
/// let tokenRefresh = SingleTaskPerformer<Token>()
///
/// func validToken() -> Future<Token> {
///     tokenRefresh.performSingleTask { api.refreshToken() }   // one refresh, however many callers
/// }
/// ```
///
/// Each caller gets a future of its own: cancelling one leaves the others waiting; once all of them
/// are cancelled, the task's future is cancelled (unless others observe it).
public final class SingleTaskPerformer<Value: Sendable>: Sendable {
    /// The shared future of the running task, if one is running.
    private let runningTask = Locked<Future<Value>?>(nil)

    /// Creates a performer with no task running.
    public init() {}

    /// Whether a task is running.
    ///
    /// ```swift
    /// if !sync.isPerforming { showIdleState() }
    /// ```
    public var isPerforming: Bool { withRunningTask { $0 != nil } }

    /// Starts the task `operation` returns, unless one is running: then `operation` is not called and
    /// the returned future shares the running task's result.
    ///
    /// ```swift
    /// let first = performer.performSingleTask { download(catalog) }
    /// let second = performer.performSingleTask { download(catalog) }   // no second download
    /// ```
    ///
    /// - Parameters:
    ///   - file: where the returned future was created, for descriptions and abandonment errors (debug
    ///     builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - operation: starts the task. Called at once on this thread, without any lock held, so it
    ///     may itself call ``performSingleTask(file:line:_:)`` (which then shares this task).
    /// - Returns: a future completing with the task's result. ``isPerforming`` is already `false`
    ///   when it completes, so its callbacks may start the next task.
    @discardableResult
    public func performSingleTask(
        file: StaticString = #fileID, line: UInt = #line,
        _ operation: () -> Future<Value>
    ) -> Future<Value> {
        let candidate = Future<Value>(initialResult: nil, file: file, line: line)
        // This caller's continuation exists before the task is published, so that other callers
        // cancelling theirs cannot cancel the task under it.
        let callersFuture = candidate.onResult(on: .none, file: file, line: line) { _ in }
        let running = withRunningTask { running -> Future<Value>? in
            // A task cancelled by all its callers is still here until its disposal clears it: not shared.
            if let running, !running.isCompleted { return running }
            running = candidate
            return nil
        }
        if let running {
            // Unused: a pending future and its continuation hold each other until cancelled.
            callersFuture.cancelQuietly()
            return running.onResult(on: .none, file: file, line: line) { _ in }
        }

        let task = operation()
        let continuation = task.onResult(on: .none, file: file, line: line) { [weak self, weak candidate] result in
            guard let candidate else { return }
            self?.clearRunningTask(candidate)
            candidate.complete(with: result)
        }
        // Runs when the task completes, or when every caller cancelled (then the task is cancelled).
        candidate.setDisposable(Disposer { [weak self, weak candidate] in
            if let candidate { self?.clearRunningTask(candidate) }
            continuation.cancelQuietly()
        })
        return callersFuture
    }

    private func withRunningTask<R>(_ body: (inout Future<Value>?) -> R) -> R {
        runningTask.withLock(body)
    }

    private func clearRunningTask(_ task: Future<Value>) {
        withRunningTask { running in
            if running === task { running = nil }
        }
    }
}

extension SingleTaskPerformer where Value == Void {
    /// Runs `action` once on `scheduler` at the timer's next turn, however many times this is called
    /// before then: for coalescing several requests (a redraw, a save) into one.
    ///
    /// ```swift
    /// let redraw = SingleTaskPerformer<Void>()
    /// model.onChange { redraw.coalesceToNextRunLoop { view.render(model) } }
    /// ```
    ///
    /// - Returns: a future completing once `action` ran, or failing with the error it threw.
    @preconcurrency
    @discardableResult
    public func coalesceToNextRunLoop(
        on scheduler: Scheduler = .current, action: @escaping @Sendable () throws -> Void
    ) -> Future<Void> {
        performSingleTask { Future().delay(by: 0).onValue(on: scheduler, action) }
    }
}
