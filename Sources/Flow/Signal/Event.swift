/// What a finite signal delivers: a value, or its end (with the error it failed with, if any).
///
/// ```swift
/// bag += downloads.onEvent { event in
///     switch event {
///     case .value(let chunk): append(chunk)
///     case .end(nil): finish()
///     case .end(let error?): report(error)
///     }
/// }
/// ```
public enum Event<Value> {
    /// A value.
    case value(Value)
    /// The end of the signal: nothing follows. `nil` for a normal end, otherwise the failure.
    case end(Error?)
}

extension Event: Sendable where Value: Sendable {}

extension Event {
    /// The value, if this is a value event.
    public var value: Value? {
        if case .value(let value) = self { return value }
        return nil
    }

    /// The error, if this is an end with an error.
    public var error: Error? {
        if case .end(let error) = self { return error }
        return nil
    }

    /// Whether this is the end.
    public var isEnd: Bool {
        if case .end = self { return true }
        return false
    }

    /// An end without an error: lets you write `.end` for `.end(nil)`.
    public static var end: Event { .end(nil) }
}
