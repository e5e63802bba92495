extension EventLoop {
    /// Runs the loop on the calling thread until `future` completes, and returns its value.
    ///
    /// The loop stays up while the future is pending, even with nothing else to do (the future may be
    /// completed from another thread). Returns at once if the future has already completed.
    ///
    /// ```swift
    /// let body = try EventLoop.main.run(until: fetch(url))
    /// ```
    ///
    /// - Throws: the future's error, or an ``EventLoopError`` if the loop cannot run.
    @discardableResult
    public func run<Value>(until future: Future<Value>) throws -> Value {
        if let result = future.result { return try result.get() }
        let keepAlive = self.keepAlive(summary: "run(until:) waits for a future")
        future.onResult(on: .none) { [self] _ in
            keepAlive.dispose()
            stop()
        }
        while future.result == nil {
            try run()
        }
        return try future.result!.get()
    }
}
