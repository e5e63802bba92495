// The names of older Deferred releases, kept so that old code compiles, with a warning naming the
// replacement. Nothing in this library uses them.

/// The reading side of a future value.
@available(*, deprecated, renamed: "FutureProtocol")
public typealias FutureType = FutureProtocol

/// The writing side of a future value.
@available(*, deprecated, renamed: "PromiseProtocol")
public typealias PromiseType = PromiseProtocol

/// A place that runs closures.
@available(*, deprecated, renamed: "Executor")
public typealias ExecutorType = Executor

/// A future that is filled with nothing when its base is; ``FutureProtocol/ignored()`` now returns a
/// `Future<Void>`.
@available(*, deprecated, renamed: "Future", message: "ignored() returns a Future<Void>")
public typealias IgnoringFuture<Base> = Future<Void>

/// A value guarded by a lock.
@available(*, deprecated, renamed: "Protected")
public typealias LockProtected<T> = Protected<T>

extension Deferred {
    /// Creates a deferred value that is filled with `value` already.
    @available(*, deprecated, renamed: "init(filledWith:)")
    public convenience init(value: Value) {
        self.init(filledWith: value)
    }
}

extension PromiseProtocol {
    /// Fills the promise unless it is filled already.
    @available(*, deprecated, renamed: "fill(with:)")
    @discardableResult
    public func fill(_ value: Value) -> Bool {
        fill(with: value)
    }

    /// Fills the promise unless it is filled already.
    @available(*, deprecated, renamed: "fill(with:)")
    @discardableResult
    public func fillIfUnfilled(_ value: Value) -> Bool {
        fill(with: value)
    }

    /// Fills the promise unless it is filled already (the spelling of Deferred's old README).
    @available(*, deprecated, renamed: "fill(with:)")
    @discardableResult
    public func fillIfUnfulfilled(_ value: Value) -> Bool {
        fill(with: value)
    }

    /// Fills the promise; when `assertIfFilled` is true, a promise filled already stops the program.
    @available(*, deprecated, message: "use mustFill(with:), or fill(with:) and its result")
    public func fill(_ value: Value, assertIfFilled: Bool) {
        if assertIfFilled {
            mustFill(with: value)
        } else {
            fill(with: value)
        }
    }
}
