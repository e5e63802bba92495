import Dispatch
import Flow

/// A future outcome of work that can fail and that can be asked to stop: a ``Future`` of a `Result`
/// with a cancellation handler.
///
/// ```swift
/// func fetchFriends(for user: User) -> Task<[Friend]> {
///     let outcome = Deferred<Task<[Friend]>.Result>()
///     let request = client.get("/users/\(user.id)/friends") { data, error in
///         if let error { outcome.fail(with: error) } else { outcome.succeed(with: parse(data)) }
///     }
///     return Task(outcome, uponCancel: { request.cancel() })
/// }
///
/// fetchFriends(for: jimbob)
///     .map { $0.map(\.name) }
///     .uponSuccess(on: .main) { names in dataSource.array = names }
/// ```
///
/// Inside a module that imports `Deferred`, `Task` names this type; write `_Concurrency.Task` for
/// Swift's.
public final class Task<Success: Sendable>: FutureProtocol {
    /// The outcome of a task: its value, or the error it failed with.
    public typealias Result = Swift.Result<Success, any Error>

    /// A task's value is its outcome.
    public typealias Value = Result

    @usableFromInline
    let future: Future<Result>

    @usableFromInline
    let cancellation: TaskCancellation

    /// A task whose outcome is `wrapped`'s; ``cancel()`` runs `cancellation`, once.
    ///
    /// - Parameters:
    ///   - wrapped: the future outcome.
    ///   - cancellation: asks the work behind `wrapped` to stop, typically by filling it with a
    ///     failure. It is released, unrun, once `wrapped` is filled.
    public init<Wrapped: FutureProtocol>(
        _ wrapped: Wrapped,
        uponCancel cancellation: @escaping @Sendable () -> Void
    ) where Wrapped.Value == Result {
        future = Future(wrapped)
        self.cancellation = TaskCancellation(cancellation)
        let pendingCancellation = self.cancellation
        uponInline(future) { _ in pendingCancellation.discardHandler() }
    }

    /// A task whose outcome is `wrapped`'s, with nothing to do on ``cancel()``.
    public init<Wrapped: FutureProtocol>(_ wrapped: Wrapped) where Wrapped.Value == Result {
        future = Future(wrapped)
        cancellation = TaskCancellation(nil)
    }

    /// A task that has finished already, with `result`.
    public init(_ result: Result) {
        future = Future(value: result)
        cancellation = TaskCancellation(nil)
    }

    /// A task that has succeeded already, with `value`.
    public convenience init(success value: Success) {
        self.init(.success(value))
    }

    /// A task that has failed already, with `error`.
    public convenience init(failure error: any Error) {
        self.init(.failure(error))
    }

    /// Calls `body` with the outcome once it is known, by submitting it to `executor`.
    @inlinable
    public func upon(_ executor: any Executor, execute body: @escaping @Sendable (Result) -> Void) {
        future.upon(executor, execute: body)
    }

    /// The outcome, if it is known; `nil` otherwise. Never blocks.
    @inlinable
    public func peek() -> Result? {
        future.peek()
    }

    /// Blocks until the outcome is known or `time` has come, and returns it, or `nil` at the
    /// deadline. See ``Deferred/wait(until:)`` for waiting on an event loop's thread.
    public func wait(until time: DispatchTime) -> Result? {
        future.wait(until: time)
    }

    /// Asks the work to stop: runs the cancellation handler, the first time only, unless the task has
    /// finished already. The task still finishes the way its work decides, typically with a failure.
    public func cancel() {
        cancellation.cancel()
    }

    /// Whether ``cancel()`` has been called.
    public var isCancelled: Bool {
        cancellation.isCancelled
    }

    /// Runs `work` on `executor` and gives its outcome as a task: its return value, or the error it
    /// threw.
    ///
    /// ```swift
    /// let parsed: Task<Document> = .async(upon: .any()) { try Document(parsing: data) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `work` runs; by default the scheduler the caller executes on, or else a
    ///     background queue.
    ///   - cancellation: run by ``cancel()``, once, unless the work has finished.
    ///   - work: the work.
    public static func async(
        upon executor: any Executor = defaultExecutor(),
        uponCancel cancellation: (@Sendable () -> Void)? = nil,
        execute work: @escaping @Sendable () throws -> Success
    ) -> Task<Success> {
        let outcome = Deferred<Result>()
        executor.submit { outcome.fill(with: Result { try work() }) }
        guard let cancellation else {
            return Task(outcome)
        }
        return Task(outcome, uponCancel: cancellation)
    }

    /// Runs `work` on `queue` and gives its outcome as a task.
    public static func async(
        upon queue: DispatchQueue,
        uponCancel cancellation: (@Sendable () -> Void)? = nil,
        execute work: @escaping @Sendable () throws -> Success
    ) -> Task<Success> {
        async(upon: queue as any Executor, uponCancel: cancellation, execute: work)
    }
}

/// What cancelling a task does: run, once, the handler of the step running now.
///
/// A task made of steps that start one after another (``Task/andThen(upon:start:)``,
/// ``Task/fallback(upon:to:)``, ``Task/repeat(upon:count:continuingIf:to:)``) records each step as it
/// starts; once cancelled, a step that starts later is cancelled at once. The handler is dropped once
/// the task finished.
@usableFromInline
final class TaskCancellation: Sendable {
    private struct State {
        var cancelCurrentStep: (@Sendable () -> Void)?
        var isCancelled = false
    }

    private let state: Locked<State>

    init(_ handler: (@Sendable () -> Void)? = nil) {
        state = Locked(State(cancelCurrentStep: handler))
    }

    var isCancelled: Bool {
        state.withLock { $0.isCancelled }
    }

    /// Cancels the step running now, and marks the task so that later steps are cancelled as they start.
    func cancel() {
        let cancelCurrentStep = state.withLock { state in
            state.isCancelled = true
            return state.cancelCurrentStep.take()
        }
        cancelCurrentStep?()
    }

    /// Records the step that runs now; cancels it at once if the task was cancelled.
    func started<StepSuccess>(_ step: Task<StepSuccess>) {
        let isCancelled = state.withLock { state in
            if !state.isCancelled {
                state.cancelCurrentStep = { step.cancel() }
            }
            return state.isCancelled
        }
        if isCancelled {
            step.cancel()
        }
    }

    /// Drops the handler without running it: the task finished.
    func discardHandler() {
        let handler = state.withLock { $0.cancelCurrentStep.take() }
        // Released here, outside the lock: its captures' deinitializers may run user code.
        _ = handler
    }
}
