extension PromiseProtocol {
    /// Fills the promise of a task's outcome with a success.
    ///
    /// ```swift
    /// let outcome = Deferred<Task<Int>.Result>()
    /// outcome.succeed(with: 42)
    /// ```
    ///
    /// - Returns: `true` if this call filled the promise, `false` if it was filled already.
    @discardableResult
    public func succeed<Success>(with value: Success) -> Bool where Value == Swift.Result<Success, any Error> {
        fill(with: .success(value))
    }

    /// Fills the promise of a task's outcome with a failure.
    ///
    /// - Returns: `true` if this call filled the promise, `false` if it was filled already.
    @discardableResult
    public func fail<Success>(with error: any Error) -> Bool where Value == Swift.Result<Success, any Error> {
        fill(with: .failure(error))
    }
}

extension PromiseProtocol where Value == Swift.Result<Void, any Error> {
    /// Fills the promise of a task of no value with a success.
    ///
    /// - Returns: `true` if this call filled the promise, `false` if it was filled already.
    @discardableResult
    public func succeed() -> Bool {
        fill(with: .success(()))
    }
}
