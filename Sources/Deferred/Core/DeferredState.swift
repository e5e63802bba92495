import Dispatch
import Flow

/// One closure waiting for a ``Deferred``'s value, and where to run it.
///
/// Where it runs is sorted once, when the closure is given, so that submitting it needs no dynamic
/// cast and no call through the ``Executor`` existential for the common executors.
@usableFromInline
enum UponHandler<Value: Sendable>: Sendable {
    /// Runs on the filling thread, or the caller's if the value is there: this library's bookkeeping.
    case fillingThread(@Sendable (Value) -> Void)
    /// Goes to the queue's `async` directly, as a caller would write it by hand.
    case queue(DispatchQueue, @Sendable (Value) -> Void)
    /// Runs at once when the submitting thread already executes on the scheduler, or else is
    /// submitted to it.
    case scheduler(Flow.Scheduler, @Sendable (Value) -> Void)
    /// Goes to any other executor's ``Executor/submit(_:)``.
    case executor(ExecutorReference, @Sendable (Value) -> Void)

    /// Submits the closure with `value`. Consuming: the closure moves into what is submitted, with no
    /// copy to retain and release.
    @inlinable
    consuming func submit(_ value: Value) {
        switch consume self {
        case .queue(let queue, let body):
            submitUpon(queue, value, body)
        case .scheduler(let scheduler, let body):
            submitUpon(scheduler, value, body)
        case .executor(let executor, let body):
            executor.submit { body(value) }
        case .fillingThread(let body):
            body(value)
        }
    }
}

/// Submits `body(value)` to `queue`: one block, whose context holds `body` and `value`, exactly what
/// a bare `queue.async { body(value) }` costs. From a loop's work, the block counts as the loop's
/// pending delivery until it ran.
@inlinable
func submitUpon<Value: Sendable>(_ queue: DispatchQueue, _ value: Value, _ body: @escaping @Sendable (Value) -> Void) {
    queue.asyncDelivering(value, body)
}

/// Runs `body(value)` at once when the caller already executes on `scheduler`, with no closure
/// allocated; otherwise submits it.
@inlinable
func submitUpon<Value: Sendable>(
    _ scheduler: Flow.Scheduler, _ value: Value, _ body: @escaping @Sendable (Value) -> Void
) {
    if !scheduler.runIfImmediate({ body(value) }) {
        scheduler.async { body(value) }
    }
}

/// The closures waiting for a value, in the order given. The first is stored inline: most deferred
/// values have a single reader, and it then costs no array.
@usableFromInline
struct UponQueue<Value: Sendable>: Sendable {
    @usableFromInline
    var first: UponHandler<Value>?

    @usableFromInline
    var rest: [UponHandler<Value>] = []

    @inlinable
    init() {}

    @inlinable
    var isEmpty: Bool { first == nil }

    @inlinable
    mutating func append(_ handler: UponHandler<Value>) {
        if first == nil {
            first = handler
        } else {
            rest.append(handler)
        }
    }

    /// Submits every handler, in order, and empties the queue. Called without any lock held: executors
    /// may run user code. Each handler is moved out of the queue into the closure it submits, with no
    /// copy to retain and release.
    @inlinable
    mutating func submitAll(_ value: Value) {
        guard let first = first.take() else { return }
        first.submit(value)
        if rest.isEmpty { return }
        let rest = self.rest
        self.rest = []
        for handler in rest {
            handler.submit(value)
        }
    }
}

/// The state of a ``Deferred``, guarded by its mutex.
@usableFromInline
enum DeferredState<Value: Sendable>: Sendable {
    /// Not filled; the handlers wait.
    case pending(UponQueue<Value>)
    /// Filled; the filling thread is still submitting handlers, and those registered meanwhile queue
    /// up behind them so that submission order stays registration order.
    case submitting(Value, UponQueue<Value>)
    /// Filled, every handler submitted.
    case filled(Value)

    @inlinable
    var value: Value? {
        switch self {
        case .pending: return nil
        case .submitting(let value, _), .filled(let value): return value
        }
    }

    /// Queues the handler `makeHandler` builds unless the value is filled and nothing is left to
    /// submit, in which case it returns the value so that the caller submits the closure itself,
    /// outside the lock. The handler is only built when it is queued: a filled value costs no retain.
    @inlinable
    mutating func enqueue(_ makeHandler: () -> UponHandler<Value>) -> Value? {
        if case .filled(let value) = self {
            return value
        }
        append(makeHandler())
        return nil
    }

    // The transitions below take the state apart with `consume` and build the next one from its
    // pieces: the handlers move from state to state, with no copy to retain and release, and an
    // array of handlers stays uniquely referenced, so that appending never copies it.

    /// Queues `handler` behind those waiting for the value or for the filling thread to submit them.
    @inlinable
    mutating func append(_ handler: UponHandler<Value>) {
        switch consume self {
        case .filled(let value):
            self = .filled(value)
            preconditionFailure("Deferred: a filled value queues no handler")
        case .pending(var handlers):
            handlers.append(handler)
            self = .pending(handlers)
        case .submitting(let value, var handlers):
            handlers.append(handler)
            self = .submitting(value, handlers)
        }
    }

    /// Fills the value if it is pending, and returns the handlers for the filling thread to submit;
    /// `nil` if the value was filled already.
    @inlinable
    mutating func fill(with value: Value) -> UponQueue<Value>? {
        switch consume self {
        case .pending(let handlers):
            self = handlers.isEmpty ? .filled(value) : .submitting(value, UponQueue())
            return handlers
        case let filled:
            self = filled
            return nil
        }
    }

    /// Ends a round of submissions by the filling thread: returns the handlers registered during it,
    /// to submit next, or `nil` when there are none, and the value is then settled.
    @inlinable
    mutating func endSubmissionRound() -> UponQueue<Value>? {
        switch consume self {
        case .submitting(let value, let registeredMeanwhile):
            if registeredMeanwhile.isEmpty {
                self = .filled(value)
                return nil
            }
            self = .submitting(value, UponQueue())
            return registeredMeanwhile
        case let other:
            self = other
            preconditionFailure("Deferred: only the filling thread leaves the submitting state")
        }
    }
}
