import Dispatch
import Flow

/// A read-only view of a value that becomes known later: what a ``Deferred`` looks like to those who
/// may read it but not fill it.
///
/// ```swift
/// func refreshFriends() -> Future<[Friend]> {
///     let friends = fetchFriends(for: jimbob)   // a Deferred<[Friend]> this type fills
///     return Future(friends)                    // callers can only read it
/// }
///
/// let stub: Future<[Friend]> = Future([])       // known already
/// ```
public struct Future<Value: Sendable>: FutureProtocol {
    @usableFromInline
    enum Source: Sendable {
        case filled(Value)
        case never
        case deferred(Deferred<Value>)
        case other(any FutureProtocol<Value>)
    }

    @usableFromInline
    let source: Source

    @inlinable
    init(source: Source) {
        self.source = source
    }

    /// A future that is known already: filled with `value`.
    @inlinable
    public init(value: Value) {
        source = .filled(value)
    }

    /// A future that is known already: filled with `value`.
    ///
    /// ```swift
    /// return Future([])
    /// ```
    @inlinable
    @_disfavoredOverload
    public init(_ value: Value) {
        source = .filled(value)
    }

    /// A read-only view of `deferred`.
    @inlinable
    public init(_ deferred: Deferred<Value>) {
        source = .deferred(deferred)
    }

    /// `future` itself: wrapping a future does not nest wrappers.
    @inlinable
    public init(_ future: Future<Value>) {
        self = future
    }

    /// A read-only view of any future, without nesting wrappers when `wrapped` is one.
    @inlinable
    public init<Wrapped: FutureProtocol>(_ wrapped: Wrapped) where Wrapped.Value == Value {
        if let future = wrapped as? Future<Value> {
            self = future
        } else if let deferred = wrapped as? Deferred<Value> {
            source = .deferred(deferred)
        } else {
            source = .other(wrapped)
        }
    }

    /// A future that is never filled: its closures are dropped unrun, and waiting for it lasts until
    /// the deadline.
    public static var never: Future<Value> {
        Future(source: .never)
    }

    /// Runs `work` on `queue` and gives its result as a future.
    ///
    /// ```swift
    /// let total: Future<Int> = .async { numbers.reduce(0, +) }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: where `work` runs; a concurrent background queue by default.
    ///   - flags: how `work` runs, as `DispatchQueue.async(flags:execute:)` takes them.
    ///   - work: computes the value.
    @preconcurrency
    public static func async(
        upon queue: DispatchQueue = .any(),
        flags: DispatchWorkItemFlags = [],
        execute work: @escaping @Sendable () -> Value
    ) -> Future<Value> {
        let deferred = Deferred<Value>()
        queue.asyncDelivering(flags: flags) { deferred.fill(with: work()) }
        return Future(deferred)
    }

    /// Runs `work` on `executor` (an event loop, a scheduler, an operation queue) and gives its result
    /// as a future.
    ///
    /// ```swift
    /// let total: Future<Int> = .async(upon: loop) { numbers.reduce(0, +) }
    /// ```
    @preconcurrency
    public static func async(
        upon executor: any Executor,
        execute work: @escaping @Sendable () -> Value
    ) -> Future<Value> {
        let deferred = Deferred<Value>()
        executor.submit { deferred.fill(with: work()) }
        return Future(deferred)
    }

    /// Calls `body` with the value once it is known, by submitting it to `executor`.
    @inlinable
    @preconcurrency
    public func upon(_ executor: any Executor, execute body: @escaping @Sendable (Value) -> Void) {
        switch source {
        case .filled(let value):
            executor.submit { body(value) }
        case .never:
            break
        case .deferred(let deferred):
            deferred.upon(executor, execute: body)
        case .other(let wrapped):
            wrapped.upon(executor, execute: body)
        }
    }

    /// Calls `body` with the value once it is known, on `queue`: once known, what a bare
    /// `queue.async { body(value) }` costs.
    ///
    /// ```swift
    /// name.upon(.main) { label.text = $0 }
    /// ```
    @inlinable
    @preconcurrency
    public func upon(_ queue: DispatchQueue, execute body: @escaping @Sendable (Value) -> Void) {
        switch source {
        case .filled(let value):
            submitUpon(queue, value, body)
        case .never:
            break
        case .deferred(let deferred):
            deferred.upon(queue, execute: body)
        case .other(let wrapped):
            wrapped.upon(queue as any Executor, execute: body)
        }
    }

    /// Calls `body` on the filling thread, or at once if filled: for this library's bookkeeping.
    @inlinable
    func uponInline(_ body: @escaping @Sendable (Value) -> Void) {
        switch source {
        case .filled(let value):
            body(value)
        case .never:
            break
        case .deferred(let deferred):
            deferred.uponInline(body)
        case .other(let wrapped):
            wrapped.upon(InlineExecutor.shared, execute: body)
        }
    }

    /// The value, if it is known; `nil` otherwise. Never blocks.
    @inlinable
    public func peek() -> Value? {
        switch source {
        case .filled(let value): return value
        case .never: return nil
        case .deferred(let deferred): return deferred.peek()
        case .other(let wrapped): return wrapped.peek()
        }
    }

    /// Blocks until the value is known or `time` has come, and returns it, or `nil` at the deadline.
    /// Inside an event loop's own work, waiting for a value that is not there yet stops the program
    /// with a message (see ``Deferred/wait(until:)``).
    public func wait(until time: DispatchTime) -> Value? {
        switch source {
        case .filled(let value):
            return value
        case .never:
            preconditionWaitingCanFinish("wait(until:)")
            _ = blockUntilSignalled(DispatchSemaphore(value: 0), until: time, "wait(until:)")
            return nil
        case .deferred(let deferred):
            return deferred.wait(until: time)
        case .other(let wrapped):
            return wrapped.wait(until: time)
        }
    }
}

extension FutureProtocol {
    /// This future as a ``Future``: hides its type, and any way to fill it.
    @inlinable
    public func eraseToFuture() -> Future<Value> {
        Future(self)
    }
}

/// Registers `body` on `future` for this library's bookkeeping: run on the filling thread, or at once
/// if filled, without going through an executor.
@inlinable
func uponInline<Wrapped: FutureProtocol>(_ future: Wrapped, _ body: @escaping @Sendable (Wrapped.Value) -> Void) {
    if let deferred = future as? Deferred<Wrapped.Value> {
        deferred.uponInline(body)
    } else if let future = future as? Future<Wrapped.Value> {
        future.uponInline(body)
    } else {
        future.upon(InlineExecutor.shared, execute: body)
    }
}
