extension Swift.Result where Failure == any Error {
    /// A success with `value`, or the failure `value` throws.
    ///
    /// ```swift
    /// let parsed = Task<Int>.Result(success: try parse(text))
    /// ```
    @inlinable
    public init(success value: @autoclosure () throws -> Success) {
        self.init(catching: value)
    }

    /// A failure with `error`.
    @inlinable
    public init(failure error: any Error) {
        self = .failure(error)
    }

    /// An outcome made from the two optionals of a Cocoa-style completion handler: a success when
    /// `value` is there (whatever `error` says), else a failure with `error`, else a failure with
    /// ``TaskResultInitializerError/invalidInput``.
    ///
    /// ```swift
    /// session.dataTask(with: url) { data, _, error in
    ///     promise.fill(with: Task<Data>.Result(value: data, error: error))
    /// }
    /// ```
    public init(value: Success?, error: (any Error)?) {
        switch (value, error) {
        case (let value?, _):
            self = .success(value)
        case (nil, let error?):
            self = .failure(error)
        case (nil, nil):
            self = .failure(TaskResultInitializerError.invalidInput)
        }
    }
}

extension Swift.Result where Success == Void, Failure == any Error {
    /// A success of no value.
    @inlinable
    public init() {
        self = .success(())
    }
}

/// The failure of ``Swift/Result/init(value:error:)`` when given neither a value nor an error.
public enum TaskResultInitializerError: Error, Sendable {
    /// Neither a value nor an error was given.
    case invalidInput
}

// Deferred's `Either` protocol spelled a task's outcome as a left (the error) or a right (the value);
// these members keep code written against it compiling on `Swift.Result`.
extension Swift.Result where Failure == any Error {
    /// A failure with `error`: Deferred's `Either` spelling.
    @inlinable
    public init(left error: any Error) {
        self = .failure(error)
    }

    /// A success with `value`: Deferred's `Either` spelling.
    @inlinable
    public init(right value: Success) {
        self = .success(value)
    }

    /// Calls `left` with the error or `right` with the value, and returns what it returns.
    ///
    /// ```swift
    /// let text = result.withValues(ifLeft: { "failed: \($0)" }, ifRight: { "got \($0)" })
    /// ```
    @inlinable
    public func withValues<Return>(
        ifLeft left: (any Error) throws -> Return, ifRight right: (Success) throws -> Return
    ) rethrows -> Return {
        switch self {
        case .success(let value): return try right(value)
        case .failure(let error): return try left(error)
        }
    }
}
