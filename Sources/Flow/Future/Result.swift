/// The outcome of a ``Future``: a value or an error. An alias of the standard library's `Result` with
/// any `Error`, so `Result<Data>` reads as in Flow. Write `Swift.Result<Value, SomeError>` for a typed one.
public typealias Result<Value> = Swift.Result<Value, Error>

extension Swift.Result {
    /// The value, if this is a success.
    @inlinable
    public var value: Success? {
        if case .success(let value) = self { return value }
        return nil
    }

    /// The error, if this is a failure.
    @inlinable
    public var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

extension Swift.Result where Success == Void {
    /// A success with no value, so that `completion(.success)` reads as in Flow where a
    /// `Result<Void>` is expected.
    ///
    /// ```swift
    /// Future<Void> { completion in
    ///     save { completion(.success) }
    ///     return NilDisposer()
    /// }
    /// ```
    public static var success: Swift.Result<Void, Failure> { .success(()) }
}

extension Swift.Result where Failure == Error {
    /// Creates a result from what `getValue` returns, or the error it throws (Flow's spelling of
    /// `Result(catching:)`).
    ///
    /// ```swift
    /// let parsed = Result(parse)   // parse: () throws -> Document
    /// ```
    @_disfavoredOverload
    public init(_ getValue: () throws -> Success) {
        do {
            self = .success(try getValue())
        } catch {
            self = .failure(error)
        }
    }

    /// The value, or throws the error (Flow's spelling of `get()`).
    public func getValue() throws -> Success {
        try get()
    }

}

/// One of two values: the result of ``select(_:or:cancelNonCompleted:file:line:)``.
public enum Either<Left, Right> {
    /// The first alternative.
    case left(Left)
    /// The second alternative.
    case right(Right)

    /// The first alternative's value, if this is `.left`. Setting a value makes this `.left`;
    /// setting nil stops the program with a message.
    public var left: Left? {
        get {
            if case .left(let value) = self { return value }
            return nil
        }
        set {
            guard let newValue else { fatalError("Either.left: cannot be set to nil") }
            self = .left(newValue)
        }
    }

    /// The second alternative's value, if this is `.right`. Setting a value makes this `.right`;
    /// setting nil stops the program with a message.
    public var right: Right? {
        get {
            if case .right(let value) = self { return value }
            return nil
        }
        set {
            guard let newValue else { fatalError("Either.right: cannot be set to nil") }
            self = .right(newValue)
        }
    }
}

extension Either where Left == Right {
    /// The value on whichever side it is.
    ///
    /// ```swift
    /// select(between: primary, or: mirror).map { $0.any }
    /// ```
    public var any: Left {
        switch self {
        case .left(let value): return value
        case .right(let value): return value
        }
    }

    /// The value transformed by `transform`, kept on its side.
    public func map<T>(transform: (Left) -> T) -> Either<T, T> {
        switch self {
        case .left(let value): return .left(transform(value))
        case .right(let value): return .right(transform(value))
        }
    }
}

extension Either: Equatable where Left: Equatable, Right: Equatable {}
extension Either: Hashable where Left: Hashable, Right: Hashable {}
extension Either: Sendable where Left: Sendable, Right: Sendable {}

/// Errors that futures themselves produce.
public enum FutureError: String, Error, Equatable, CustomStringConvertible {
    /// The future was cancelled with ``Future/cancel()`` before it completed.
    case aborted

    /// A sentence saying what happened.
    public var description: String {
        switch self {
        case .aborted: return "FutureError.aborted: the future was cancelled before it completed"
        }
    }
}

/// The error of a future whose operation released its completion callback without ever calling it:
/// otherwise the future, and whoever waits on it, would wait forever.
public struct FutureAbandonedError: Error, CustomStringConvertible {
    /// Where the abandoned future was created (file and line; recorded in debug builds).
    public let creationSite: String

    /// A sentence naming the future's creation site.
    public var description: String {
        "FutureAbandonedError: the operation of the future created at \(creationSite) released its completion callback without calling it"
    }
}

/// A marker for ``Future/init(_:file:line:)-(Future<Value>.Forever,_,_)``: a future that never completes.
public enum Forever: Sendable {
    /// Never.
    case forever
}
