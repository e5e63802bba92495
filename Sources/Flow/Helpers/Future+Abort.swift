extension Future {
    /// A future that completes like this one, unless one of `futures` completes first (with a value
    /// or an error): then it fails with ``FutureError/aborted`` and this future is cancelled (unless
    /// others observe it, as with ``cancel()``).
    ///
    /// ```swift
    /// let download = fetch(report).abort(forFutures: [userTappedCancel, sessionEnded])
    /// download.onError { error in
    ///     if error as? FutureError == .aborted { print("stopped") }
    /// }
    /// ```
    ///
    /// The futures in `futures` are only observed, never cancelled: they usually belong to someone
    /// else (a button, a session). A future among them that is already completed aborts at once.
    ///
    /// - Returns: a future with this future's result, or ``FutureError/aborted``. Cancelling it
    ///   cancels this future (unless others observe it).
    @discardableResult
    public final func abort(
        forFutures futures: [Future<Void>], file: StaticString = #fileID, line: UInt = #line
    ) -> Future<Value> {
        let promise = Future<Value>(initialResult: nil, file: file, line: line, countedLike: liveCount)
        // Weak references to `promise`: the continuations below outlive it when their futures stay
        // pending, and must not keep it (nor, through its disposable, this future's chain) alive.
        let continuation = onResult(on: .none, file: file, line: line) { [weak promise] result in
            promise?.complete(with: result)
        }
        // Disposed when `promise` completes (either way) or is cancelled.
        promise.setDisposable(Disposer { continuation.cancel() })
        for trigger in futures {
            guard !promise.isCompleted else { break }
            trigger.onResult(on: .none, file: file, line: line) { [weak promise] _ in
                promise?.complete(with: .failure(FutureError.aborted))
            }
        }
        return promise
    }
}
