import Dispatch
import Flow

/// A value that is not known yet: filled once, by anyone, and read by everyone who asked.
///
/// Copies of a `Deferred` are references to one value. Readers call `upon(_:execute:)` to run code
/// once it is filled, ``peek()`` to look without waiting, or ``wait(until:)`` to block; writers call
/// ``fill(with:)``, of which only the first counts.
///
/// ```swift
/// func performOperation() -> Deferred<Int> {
///     let deferred = Deferred<Int>()
///     DispatchQueue.global().async {
///         deferred.fill(with: computeResult())
///     }
///     return deferred
/// }
///
/// performOperation().upon { result in print("got \(result)") }
/// ```
public final class Deferred<Value: Sendable>: FutureProtocol, PromiseProtocol, @unchecked Sendable {
    // @unchecked Sendable: the only mutable state, `lockedState`, is read and written only under
    // `lock` (in `withState`).
    // The state and its lock are stored here rather than in a separate locked object: one
    // allocation per deferred value, not two.
    @usableFromInline
    let lock = FutureLock()

    /// Guarded by `lock`: read and written only inside ``withState(_:)``.
    @usableFromInline @exclusivity(unchecked)
    var lockedState: DeferredState<Value>

    /// Creates a deferred value that is not filled yet.
    @inlinable
    public init() {
        lockedState = .pending(UponQueue())
    }

    /// Creates a deferred value that is filled with `value` already.
    @inlinable
    public init(filledWith value: Value) {
        lockedState = .filled(value)
    }

    /// Runs `body` with the state, under the lock, and returns what it returns.
    @inlinable
    func withState<R>(_ body: (inout DeferredState<Value>) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&lockedState)
    }

    /// Whether the value is filled.
    @inlinable
    public var isFilled: Bool {
        withState { $0.value != nil }
    }

    /// The value, if it is filled; `nil` otherwise. Never blocks.
    @inlinable
    public func peek() -> Value? {
        withState { $0.value }
    }

    /// Calls `body` with the value once it is filled, by submitting it to `executor`.
    ///
    /// Closures are submitted in the order given, including those given while a fill is submitting
    /// earlier ones; on a serial executor they run in that order. A closure given after the value is
    /// filled is submitted at once. Closures are released once they ran, or with the deferred value
    /// if it is never filled.
    ///
    /// - Parameters:
    ///   - executor: where `body` runs: a queue, a scheduler, an event loop.
    ///   - body: the work to do with the value.
    @inlinable
    @preconcurrency
    public func upon(_ executor: any Executor, execute body: @escaping @Sendable (Value) -> Void) {
        // Sorted here, once: submitting to a scheduler or a queue then needs no cast and no call
        // through the existential. The scheduler goes first: it is the loop's common case.
        if let scheduler = executor as? Flow.Scheduler {
            upon(scheduler: scheduler, execute: body)
        } else if let queue = executor as? DispatchQueue {
            upon(queue, execute: body)
        } else if let value = withState({
            $0.enqueue { .executor(ExecutorReference(executor), body) }
        }) {
            executor.submit { body(value) }
        }
    }

    /// Calls `body` with the value once it is filled, on `queue`.
    ///
    /// Once the value is filled this costs what `queue.async { body(value) }` costs: one block on the
    /// queue, with nothing between the queue and `body`.
    ///
    /// ```swift
    /// friends.upon(.main) { friends in tableView.reloadData() }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: where `body` runs.
    ///   - body: the work to do with the value.
    @inlinable
    @preconcurrency
    public func upon(_ queue: DispatchQueue, execute body: @escaping @Sendable (Value) -> Void) {
        if let value = withState({ $0.enqueue { .queue(queue, body) } }) {
            submitUpon(queue, value, body)
        }
    }

    /// Calls `body` with the value once it is filled, on `scheduler`: at once, with nothing allocated
    /// or queued, when the value is there and the caller already runs on `scheduler`.
    @inlinable
    func upon(scheduler: Flow.Scheduler, execute body: @escaping @Sendable (Value) -> Void) {
        if let value = withState({ $0.enqueue { .scheduler(scheduler, body) } }) {
            submitUpon(scheduler, value, body)
        }
    }

    /// Calls `body` on the filling thread, or at once if filled: for this library's bookkeeping.
    @inlinable
    func uponInline(_ body: @escaping @Sendable (Value) -> Void) {
        if let value = withState({ $0.enqueue { .fillingThread(body) } }) {
            body(value)
        }
    }

    /// Fills the value unless it is filled already, then submits every closure waiting for it.
    ///
    /// Of several fills, however they race, exactly one returns `true`.
    ///
    /// - Returns: `true` if this call filled the value, `false` if it was filled already.
    @inlinable
    @discardableResult
    public func fill(with value: Value) -> Bool {
        guard let handlers = withState({ $0.fill(with: value) }) else {
            return false
        }
        if !handlers.isEmpty {
            submitHandlers(handlers, with: value)
        }
        return true
    }

    /// Submits `handlers`, then those registered while they were submitted, until none is left.
    /// No lock is held while submitting: an executor may run user code at once. Inlinable, like the
    /// fill that calls it, so that it is specialised for the value's type: generic, it looked up the
    /// metadata of the handlers' types on every fill.
    @inlinable
    func submitHandlers(_ handlers: consuming UponQueue<Value>, with value: Value) {
        var batch = handlers
        while true {
            batch.submitAll(value)
            guard let next = withState({ $0.endSubmissionRound() }) else {
                return
            }
            batch = next
        }
    }

    /// Blocks until the value is filled or `time` has come, and returns it, or `nil` at the
    /// deadline.
    ///
    /// ```swift
    /// // Blocks the calling thread!
    /// let result: Int = performOperation().wait(until: .distantFuture)!
    /// ```
    ///
    /// Called inside an event loop's own work (one of its callbacks) before the value is filled, it
    /// stops the program with a message instead: the loop may be the one to fill the value, and it
    /// cannot run while its thread waits. Use `upon(_:execute:)` there. Anywhere else, the main
    /// thread included, it blocks.
    public func wait(until time: DispatchTime) -> Value? {
        if let value = peek() {
            return value
        }
        preconditionWaitingCanFinish("wait(until:)")
        let filled = DispatchSemaphore(value: 0)
        uponInline { _ in filled.signal() }
        _ = blockUntilSignalled(filled, until: time, "wait(until:)")
        return peek()
    }
}
