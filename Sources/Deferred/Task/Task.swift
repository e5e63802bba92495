import Dispatch
import Flow
import Synchronization

/// A future outcome of work that can fail and that can be asked to stop: a ``Future`` of a `Result`
/// with a cancellation handler.
///
/// ```swift
/// func fetchFriends(for user: User) -> Task<[Friend]> {
///     let promise = Task<[Friend]>.Promise()
///     let request = client.get("/users/\(user.id)/friends") { data, error in
///         if let error { promise.fail(with: error) } else { promise.succeed(with: parse(data)) }
///     }
///     return Task(promise, uponCancel: { request.cancel() })
/// }
///
/// fetchFriends(for: jimbob)
///     .map(upon: .any()) { $0.map(\.name) }
///     .uponSuccess(on: .main) { names in dataSource.array = names }
/// ```
///
/// In a file that imports `Deferred` (or `Task`), `Task` names this type, as it did with Deferred;
/// write `_Concurrency.Task` for Swift's.
public final class Task<Success: Sendable>: TaskProtocol {
    /// The outcome of a task: its value, or the error it failed with.
    public typealias Result = Swift.Result<Success, any Error>

    /// A task's value is its outcome.
    public typealias Value = Result

    /// The writing side of a task's outcome: fill it with ``PromiseProtocol/succeed(with:)`` or
    /// ``PromiseProtocol/fail(with:)``, then hand out `Task(promise)`.
    ///
    /// ```swift
    /// let promise = Task<Int>.Promise()
    /// DispatchQueue.any().async { promise.succeed(with: 4) }
    /// return Task(promise)
    /// ```
    public typealias Promise = Deferred<Result>

    @usableFromInline
    let future: Future<Result>

    @usableFromInline
    let cancellation: TaskCancellation

    /// A task whose outcome is `future`'s; ``cancel()`` runs `cancellation`, once, unless the
    /// outcome is known by then.
    ///
    /// ```swift
    /// return Task(promise, uponCancel: { request.cancel() })
    /// let stuck = Task<Int>(.never) { print("cancelled") }
    /// ```
    ///
    /// - Parameters:
    ///   - future: the future outcome.
    ///   - cancellation: asks the work behind `future` to stop, typically by filling it with a
    ///     failure. It runs on the thread that calls ``cancel()``, and is released, unrun, once
    ///     `future` is filled.
    @preconcurrency
    public init(_ future: Future<Result>, uponCancel cancellation: (@Sendable () -> Void)? = nil) {
        self.future = future
        self.cancellation = TaskCancellation(cancellation)
        if cancellation != nil {
            // Weakly: the future may never be filled, and its handler must not keep the cancellation
            // alive (its closure often captures the very deferred value the handler waits on).
            let pendingCancellation = self.cancellation
            uponInline(future) { [weak pendingCancellation] _ in pendingCancellation?.discardHandler() }
        }
    }

    /// A task whose outcome is `wrapped`'s; ``cancel()`` cancels `wrapped`, then runs `cancellation`.
    ///
    /// ```swift
    /// let promise = Task<Int>.Promise()
    /// let task = Task(promise)
    /// ```
    @preconcurrency
    public convenience init<Wrapped: TaskProtocol>(
        _ wrapped: Wrapped, uponCancel cancellation: (@Sendable () -> Void)? = nil
    ) where Wrapped.Success == Success {
        let future = Future<Result>(resultFrom: wrapped)
        if cancellation == nil, wrapped is Deferred<Wrapped.Value> || wrapped is Future<Wrapped.Value> {
            // A promise or a future has nothing to cancel.
            self.init(future)
            return
        }
        self.init(future, uponCancel: {
            wrapped.cancel()
            cancellation?()
        })
    }

    /// A task whose value is `wrapped`'s, once it is filled: a future that cannot fail, as a task.
    ///
    /// ```swift
    /// let count = Task(succeedsFrom: Deferred<Int>())
    /// ```
    @preconcurrency
    public convenience init<Wrapped: FutureProtocol>(
        succeedsFrom wrapped: Wrapped, uponCancel cancellation: (@Sendable () -> Void)? = nil
    ) where Wrapped.Value == Success {
        self.init(wrapped.every { Result.success($0) }, uponCancel: cancellation)
    }

    /// A task that has finished already, with `result`.
    public convenience init(_ result: Result) {
        self.init(Future(value: result))
    }

    /// A task that has succeeded already with `value`, or failed with the error `value` throws.
    ///
    /// ```swift
    /// let done = Task(success: 42)
    /// ```
    ///
    /// Disfavoured, so that a trailing closure (`Task { ... }`) is never taken for the value.
    @_disfavoredOverload
    public convenience init(success value: @autoclosure () throws -> Success) {
        self.init(Result(catching: value))
    }

    /// A task that has failed already, with `error`.
    public convenience init(failure error: any Error) {
        self.init(.failure(error))
    }

    /// A task that has finished already with what `body` returns, or the error it throws.
    ///
    /// ```swift
    /// let parsed = Task { try JSONDecoder().decode(Item.self, from: data) }
    /// ```
    public convenience init(catching body: () throws -> Success) {
        self.init(Result(catching: body))
    }

    /// A task of the outcome of `operation`, run by Swift concurrency; cancelling the task cancels it.
    ///
    /// In a file that imports `Deferred` (or `Task`), `Task` names Deferred's type, so `Task { ... }`
    /// with an `async` closure lands here, with a warning: the work runs as Swift's task would run it,
    /// and its outcome fills this one. Write `_Concurrency.Task { ... }` for Swift's own.
    @available(
        *, deprecated,
        message: "in a file that imports Deferred, Task is Deferred's task; write _Concurrency.Task { ... } for Swift's"
    )
    public convenience init(
        priority: TaskPriority? = nil, operation: sending @escaping @isolated(any) () async throws -> Success
    ) {
        let promise = Promise()
        let work = _Concurrency.Task(priority: priority) {
            let result: Result
            do {
                result = .success(try await operation())
            } catch {
                result = .failure(error)
            }
            promise.fill(with: result)
        }
        self.init(Future(promise), uponCancel: { work.cancel() })
    }

    /// A task that never finishes; cancelling it does nothing.
    public static var never: Task<Success> {
        Task(Future<Result>.never)
    }

    /// Calls `body` with the outcome once it is known, by submitting it to `executor`.
    @preconcurrency
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
    /// deadline. See ``Deferred/wait(until:)`` for waiting inside an event loop's work.
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
}

extension Future {
    /// A future of the outcome of `wrapped`: the same outcome, as a `Result`.
    public init<Wrapped: TaskProtocol>(resultFrom wrapped: Wrapped) where Value == Task<Wrapped.Success>.Result {
        if let task = wrapped as? Task<Wrapped.Success> {
            self = task.future
        } else if let same = wrapped as? Future<Value> {
            self = same
        } else if let deferred = wrapped as? Deferred<Value> {
            self.init(deferred)
        } else {
            self.init(wrapped.every { $0.taskResult })
        }
    }

    /// A future of a success with `wrapped`'s value, once it is filled.
    public init<Wrapped: FutureProtocol>(succeedsFrom wrapped: Wrapped) where Value == Task<Wrapped.Value>.Result {
        self.init(wrapped.every { Task<Wrapped.Value>.Result.success($0) })
    }
}

extension TaskProtocol {
    /// This task as a ``Task``: hides its type; cancelling the ``Task`` cancels this one.
    ///
    /// ```swift
    /// func load() -> Task<Int> { promise.eraseToTask() }
    /// ```
    public func eraseToTask() -> Task<Success> {
        if let task = self as? Task<Success> {
            return task
        }
        return Task(self)
    }
}

/// What cancelling a task does: run, once, the handler of the step running now.
///
/// A task made of steps that start one after another (``TaskProtocol/andThen(upon:start:)``,
/// ``TaskProtocol/fallback(upon:to:)``, ``Task/repeat(upon:count:continuingIf:to:)``) records each step as it
/// starts; once cancelled, a step that starts later is cancelled at once. The handler is dropped once
/// the task finished.
@usableFromInline
final class TaskCancellation: Sendable {
    private struct State {
        var cancelCurrentStep: (@Sendable () -> Void)?
        var isCancelled = false
    }

    private let state: Locked<State>

    /// Set by ``cancel()`` before it lets go of anything: it outlives this object for the steps that
    /// reach it through a ``StepChainReference``.
    fileprivate let cancelledMark = CancelledMark()

    init(_ handler: (@Sendable () -> Void)? = nil) {
        state = Locked(State(cancelCurrentStep: handler))
    }

    var isCancelled: Bool {
        state.withLock { $0.isCancelled }
    }

    /// How the continuations of the steps reach this chain: see ``StepChainReference``.
    var referenceForSteps: StepChainReference {
        StepChainReference(chain: self, cancelledMark: cancelledMark)
    }

    /// Cancels the step running now, and marks the task so that later steps are cancelled as they start.
    func cancel() {
        let cancelCurrentStep = state.withLock { state in
            state.isCancelled = true
            cancelledMark.set()
            return state.cancelCurrentStep.take()
        }
        cancelCurrentStep?()
    }

    /// Records the step that runs now; cancels it at once if the task was cancelled.
    func started<Step: TaskProtocol>(_ step: Step) {
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

/// Whether a ``TaskCancellation`` was cancelled, in an object of its own.
final class CancelledMark: Sendable {
    private let isSetFlag = Atomic<Bool>(false)

    var isSet: Bool { isSetFlag.load(ordering: .acquiring) }

    func set() { isSetFlag.store(true, ordering: .releasing) }
}

/// How the continuation of a chained task reaches the chain of steps it records its step in.
///
/// The chain weakly: the chain's handler holds the step running now, whose handlers hold the
/// continuation, and a step that never finishes would keep that cycle alive. Whether it was
/// cancelled strongly: ``Task/cancel()`` lets go of the handler it ran, which held the returned task's
/// only reference to the chain, so a continuation that runs after the cancel finds the chain gone
/// and must still cancel the step it starts. A chain gone without a cancel is one nobody can cancel
/// any more: its steps run to their end.
struct StepChainReference: Sendable {
    weak let chain: TaskCancellation?
    let cancelledMark: CancelledMark

    /// Whether the chain was cancelled.
    var isCancelled: Bool {
        chain?.isCancelled ?? cancelledMark.isSet
    }

    /// Records `step` as the step running now, or cancels it at once if the chain was cancelled.
    func started<Step: TaskProtocol>(_ step: Step) {
        if let chain {
            chain.started(step)
        } else if cancelledMark.isSet {
            step.cancel()
        }
    }
}

extension Future {
    /// A future of a task's outcome that has succeeded already with `value`, or failed with the error
    /// `value` throws.
    ///
    /// ```swift
    /// let done = Future<Task<Int>.Result>(success: 42)
    /// ```
    public init<Success>(success value: @autoclosure () throws -> Success) where Value == Task<Success>.Result {
        self.init(value: Task<Success>.Result(catching: value))
    }

    /// A future of a task's outcome that has failed already with `error`.
    public init<Success>(failure error: any Error) where Value == Task<Success>.Result {
        self.init(value: .failure(error))
    }
}
