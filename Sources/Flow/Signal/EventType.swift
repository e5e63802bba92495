/// What a listener registration receives: first one ``initial(_:)`` with the signal's current value
/// (`nil` for a signal without one), then ``event(_:)``s.
///
/// Most code listens with `onValue` or `onEvent`; ``SignalProvider/onEventType(on:_:)-(Scheduler,_)`` gives this
/// lower-level view, which is what transforms are built on.
///
/// ```swift
/// bag += readSignal.onEventType { eventType in
///     switch eventType {
///     case .initial(let current): print("now:", current as Any)
///     case .event(let event): print("then:", event)
///     }
/// }
/// ```
public enum EventType<Value> {
    /// The current value when listening started (`nil` for a signal without a current value). Always
    /// delivered first, exactly once.
    case initial(Value?)
    /// A value or the end.
    case event(Event<Value>)
}

extension EventType: Sendable where Value: Sendable {}

extension EventType {
    /// The value carried by an `.initial` with a value or by a value event.
    public var value: Value? {
        switch self {
        case .initial(let value): return value
        case .event(.value(let value)): return value
        case .event(.end): return nil
        }
    }

    /// Transforms the carried value, keeping the kind of event.
    public func map<Output>(_ transform: (Value) throws -> Output) rethrows -> EventType<Output> {
        switch self {
        case .initial(nil): return .initial(nil)
        case .initial(let value?): return .initial(try transform(value))
        case .event(.value(let value)): return .event(.value(try transform(value)))
        case .event(.end(let error)): return .event(.end(error))
        }
    }

    @inlinable
    var isEnd: Bool {
        if case .event(.end) = self { return true }
        return false
    }
}
