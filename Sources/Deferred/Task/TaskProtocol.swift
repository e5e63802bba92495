import Dispatch

/// A value that is a task's outcome: a success or an error. `Swift.Result` with any `Error` is one.
///
/// ``TaskProtocol`` asks its futures' values to be one, so that a ``Deferred`` or a ``Future`` of a
/// `Result` gets every task method (Deferred's `Either` played this part).
public protocol TaskResultProtocol<Success> {
    /// The type of a success's value.
    associatedtype Success

    /// This outcome as a `Swift.Result`.
    var taskResult: Swift.Result<Success, any Error> { get }
}

extension Swift.Result: TaskResultProtocol where Failure == any Error {
    /// This outcome itself.
    @inlinable
    public var taskResult: Swift.Result<Success, any Error> { self }
}

/// A future outcome of work that can fail, and that may be asked to stop: ``Task``, and any
/// ``FutureProtocol`` whose value is a `Result` (a ``Deferred`` or a ``Future`` of one, a
/// ``Task/Promise``).
///
/// Every conforming type gets the task methods: `uponSuccess(on:execute:)`,
/// `uponFailure(on:execute:)`, `map(upon:transform:)`, `andThen(upon:start:)`,
/// `recover(upon:substituting:)`, `fallback(upon:to:)`, ``everySuccess(per:)``, ``ignored()``,
/// ``andSuccess(of:)``, ``eraseToTask()``.
///
/// ```swift
/// let promise = Task<Int>.Promise()
/// promise.uponSuccess { value in print("got \(value)") }
/// promise.succeed(with: 42)
/// ```
public protocol TaskProtocol<Success>: FutureProtocol where Value: TaskResultProtocol, Value.Success == Success {
    /// The type of a success's value.
    associatedtype Success: Sendable

    /// Whether ``cancel()`` has been called. A type that cannot be cancelled answers `false`.
    var isCancelled: Bool { get }

    /// Asks the work to stop, if the type supports it; by default it does nothing. The task still
    /// finishes the way its work decides, typically with a failure.
    func cancel()
}

extension TaskProtocol {
    /// `false`: a task that cannot be cancelled never is.
    public var isCancelled: Bool {
        false
    }

    /// Does nothing: this task cannot be cancelled.
    public func cancel() {}

    /// The type of a task's failure: any error.
    public typealias Failure = any Error
}

extension Deferred: TaskProtocol where Value: TaskResultProtocol {
    /// The type of a success's value.
    public typealias Success = Value.Success
}

extension Future: TaskProtocol where Value: TaskResultProtocol {
    /// The type of a success's value.
    public typealias Success = Value.Success
}
