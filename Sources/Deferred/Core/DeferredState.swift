import Flow

/// One closure waiting for a ``Deferred``'s value, and where to run it.
@usableFromInline
struct UponHandler<Value: Sendable>: Sendable {
    /// Where `body` runs; `nil` runs it on the filling thread (this library's own bookkeeping).
    @usableFromInline
    let executor: ExecutorReference?

    @usableFromInline
    let body: @Sendable (Value) -> Void

    @inlinable
    init(executor: ExecutorReference?, body: @escaping @Sendable (Value) -> Void) {
        self.executor = executor
        self.body = body
    }

    @inlinable
    func submit(_ value: Value) {
        guard let executor else {
            body(value)
            return
        }
        // A scheduler the caller already runs on takes the body at once, with no closure allocated.
        if let scheduler = executor.executor as? Flow.Scheduler, scheduler.runIfImmediate({ body(value) }) {
            return
        }
        executor.submit { [body] in body(value) }
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

    /// Submits every handler, in order. Called without any lock held: executors may run user code.
    @inlinable
    func submitAll(_ value: Value) {
        guard let first else { return }
        first.submit(value)
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

    /// The value once filled and every closure given before has been submitted: a closure given now
    /// may run at once without overtaking them.
    @inlinable
    var settledValue: Value? {
        if case .filled(let value) = self { return value }
        return nil
    }

    /// Queues `handler` unless the value is filled and nothing is left to submit, in which case it
    /// returns the value so that the caller submits `handler` itself, outside the lock.
    @inlinable
    mutating func enqueue(_ handler: UponHandler<Value>) -> Value? {
        switch self {
        case .filled(let value):
            return value
        case .pending(var handlers):
            // Dropping our own reference first keeps the array uniquely referenced: no copy on append.
            self = .pending(UponQueue())
            handlers.append(handler)
            self = .pending(handlers)
            return nil
        case .submitting(let value, var handlers):
            self = .submitting(value, UponQueue())
            handlers.append(handler)
            self = .submitting(value, handlers)
            return nil
        }
    }
}
