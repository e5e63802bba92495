import Dispatch

// Older spellings of upon, map, flatMap and wait. Those that a trailing closure would make ambiguous
// with today's names are `@_disfavoredOverload`: `future.upon { ... }` means today's `upon`.

extension FutureProtocol {
    /// Calls `body` with the value once it is known, on `executor`.
    @available(*, deprecated, renamed: "upon(_:execute:)")
    @_disfavoredOverload
    @preconcurrency
    public func upon(_ executor: any Executor, body: @escaping @Sendable (Value) -> Void) {
        upon(executor, execute: body)
    }

    /// Calls `body` with the value once it is known, on `queue`.
    @available(*, deprecated, renamed: "upon(_:execute:)")
    @_disfavoredOverload
    @preconcurrency
    public func upon(_ queue: DispatchQueue, body: @escaping @Sendable (Value) -> Void) {
        upon(queue as any Executor, execute: body)
    }

    /// Calls `body` with the value once it is known, on the default executor.
    @available(*, deprecated, renamed: "upon(_:execute:)")
    @_disfavoredOverload
    @preconcurrency
    public func upon(body: @escaping @Sendable (Value) -> Void) {
        upon(Self.defaultUponExecutor, execute: body)
    }

    /// Calls `body` with the value once it is known, on the main queue.
    @available(*, deprecated, renamed: "upon(_:execute:)", message: "use upon(.main, execute:)")
    @preconcurrency
    public func uponMainQueue(_ body: @escaping @Sendable (Value) -> Void) {
        upon(DispatchQueue.main as any Executor, execute: body)
    }

    /// A future of `transform` applied to the value.
    @available(*, deprecated, renamed: "map(upon:transform:)")
    @_disfavoredOverload
    @preconcurrency
    public func map<NewValue: Sendable>(
        upon executor: any Executor = defaultExecutor(),
        _ transform: @escaping @Sendable (Value) -> NewValue
    ) -> Future<NewValue> {
        map(upon: executor, transform: transform)
    }

    /// A future of `transform` applied to the value, running on `queue`.
    @available(*, deprecated, renamed: "map(upon:transform:)")
    @_disfavoredOverload
    @preconcurrency
    public func map<NewValue: Sendable>(
        upon queue: DispatchQueue,
        _ transform: @escaping @Sendable (Value) -> NewValue
    ) -> Future<NewValue> {
        map(upon: queue as any Executor, transform: transform)
    }

    /// Starts the next asynchronous step with the value.
    @available(*, deprecated, renamed: "andThen(upon:start:)")
    @preconcurrency
    public func flatMap<NewFuture: FutureProtocol>(
        upon executor: any Executor = defaultExecutor(),
        _ start: @escaping @Sendable (Value) -> NewFuture
    ) -> Future<NewFuture.Value> {
        andThen(upon: executor, start: start)
    }

    /// Starts the next asynchronous step with the value, running `start` on `queue`.
    @available(*, deprecated, renamed: "andThen(upon:start:)")
    @preconcurrency
    public func flatMap<NewFuture: FutureProtocol>(
        upon queue: DispatchQueue,
        _ start: @escaping @Sendable (Value) -> NewFuture
    ) -> Future<NewFuture.Value> {
        andThen(upon: queue as any Executor, start: start)
    }

    /// Blocks until the value is known or the timeout has passed.
    @available(*, deprecated, renamed: "wait(until:)")
    public func wait(_ timeout: Timeout) -> Value? {
        wait(until: timeout.deadline)
    }
}

/// How long ``FutureProtocol/wait(_:)`` blocks.
@available(*, deprecated, renamed: "DispatchTime", message: "use wait(until:) with a DispatchTime")
public enum Timeout: Sendable {
    /// Does not block: the value if it is there.
    case Now
    /// Blocks until the value is there.
    case Forever
    /// Blocks for at most this many seconds.
    case Interval(Double)

    var deadline: DispatchTime {
        switch self {
        case .Now:
            return .now()
        case .Forever:
            return .distantFuture
        case .Interval(let seconds):
            return .now() + max(0, seconds)
        }
    }
}

extension Collection where Element: FutureProtocol {
    /// A future of all the values, in order, once all are filled.
    @available(*, deprecated, renamed: "allFilled()")
    public var joinedValues: Future<[Element.Value]> {
        allFilled()
    }
}

extension Sequence where Element: FutureProtocol {
    /// A future of whichever value is filled first.
    @available(*, deprecated, renamed: "firstFilled()")
    public var earliestFilled: Future<Element.Value> {
        firstFilled()
    }
}
