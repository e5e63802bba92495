import Dispatch
import Flow

/// A value that is not known yet: filled once, by anyone, and read by everyone who asked.
///
/// Copies of a `Deferred` are references to one value. Readers call ``upon(_:execute:)`` to run code
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
public final class Deferred<Value: Sendable>: FutureProtocol, PromiseProtocol {
    @usableFromInline
    let state: Locked<DeferredState<Value>>

    /// Creates a deferred value that is not filled yet.
    @inlinable
    public init() {
        state = Locked(.pending(UponQueue()))
    }

    /// Creates a deferred value that is filled with `value` already.
    @inlinable
    public init(filledWith value: Value) {
        state = Locked(.filled(value))
    }

    /// Whether the value is filled.
    @inlinable
    public var isFilled: Bool {
        state.withLock { $0.value != nil }
    }

    /// The value, if it is filled; `nil` otherwise. Never blocks.
    @inlinable
    public func peek() -> Value? {
        state.withLock { $0.value }
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
    public func upon(_ executor: any Executor, execute body: @escaping @Sendable (Value) -> Void) {
        // The common case on a loop: the value is there and the caller already runs on the scheduler
        // asked for. The body then runs at once, and nothing is allocated or queued.
        if let scheduler = executor as? Flow.Scheduler, let value = state.withLock({ $0.settledValue }),
            scheduler.runIfImmediate({ body(value) }) {
            return
        }
        upon(UponHandler(executor: ExecutorReference(executor), body: body))
    }

    /// Calls `body` on the filling thread, or at once if filled: for this library's bookkeeping.
    @inlinable
    func uponInline(_ body: @escaping @Sendable (Value) -> Void) {
        upon(UponHandler(executor: nil, body: body))
    }

    @inlinable
    func upon(_ handler: UponHandler<Value>) {
        if let value = state.withLock({ $0.enqueue(handler) }) {
            handler.submit(value)
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
        let handlers: UponQueue<Value>? = state.withLock { state in
            guard case .pending(let handlers) = state else {
                return nil
            }
            state = handlers.isEmpty ? .filled(value) : .submitting(value, UponQueue())
            return handlers
        }
        guard let handlers else {
            return false
        }
        if !handlers.isEmpty {
            submitHandlers(handlers, with: value)
        }
        return true
    }

    /// Submits `handlers`, then those registered while they were submitted, until none is left.
    /// No lock is held while submitting: an executor may run user code at once.
    @usableFromInline
    func submitHandlers(_ handlers: UponQueue<Value>, with value: Value) {
        var batch = handlers
        while true {
            batch.submitAll(value)
            let next: UponQueue<Value>? = state.withLock { state in
                guard case .submitting(let value, let registeredMeanwhile) = state else {
                    preconditionFailure("Deferred: only the filling thread leaves the submitting state")
                }
                if registeredMeanwhile.isEmpty {
                    state = .filled(value)
                    return nil
                }
                state = .submitting(value, UponQueue())
                return registeredMeanwhile
            }
            guard let next else { return }
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
    /// Called on the thread of a running event loop before the value is filled, it stops the program
    /// with a message instead: the loop may be the one to fill the value, so waiting would deadlock
    /// it. Use ``upon(_:execute:)`` there.
    public func wait(until time: DispatchTime) -> Value? {
        if let value = peek() {
            return value
        }
        preconditionWaitingDoesNotBlockLoop("wait(until:)")
        let filled = DispatchSemaphore(value: 0)
        uponInline { _ in filled.signal() }
        _ = filled.wait(timeout: time)
        return peek()
    }
}
