extension Future {
    /// A future that completes like this one, unless one of `futures` completes first: then it fails
    /// with that future's error, or with ``FutureError/aborted`` if it succeeded, and this future is
    /// cancelled (unless others observe it, as with ``cancel()``).
    ///
    /// ```swift
    /// let download = fetch(report).abort(forFutures: [userTappedCancel, sessionEnded])
    /// download.onError { error in
    ///     if error as? FutureError == .aborted { print("stopped") }
    /// }
    /// ```
    ///
    /// Once the returned future completes, either way, or is cancelled, the futures in `futures` that
    /// are still pending are cancelled too, as in Flow (``cancel()`` is ignored for those that others
    /// observe). A future among them that is already completed aborts at once. An empty `futures`
    /// aborts nothing.
    ///
    /// - Returns: a future with this future's result, or the abort. Cancelling it cancels this future
    ///   (unless others observe it). Repeating it (``onErrorRepeat(on:delayBetweenRepetitions:maxRepetitions:file:line:when:)-(Scheduler,_,_,_,_,_)``)
    ///   runs this future's operation again, watched by fresh runs of `futures`.
    @discardableResult
    public final func abort(
        forFutures futures: [Future<Void>], file: StaticString = #fileID, line: UInt = #line
    ) -> Future<Value> {
        Future(on: .none, file: file, line: line, operationWithMover: { completion, mover in
            let observation = mover.moveInside(self).onResult(on: .none) { completion($0) }
            guard !futures.isEmpty else {
                return Disposer { observation.cancelQuietly() }
            }
            // Moved inside too: a repetition is watched by fresh runs of the triggers that are
            // operations, since this run cancels the ones it leaves pending.
            let triggers = Flow.select(between: futures.map(mover.moveInside)).onResult(on: .none) { result in
                completion(.failure(result.error ?? FutureError.aborted))
            }
            return Disposer {
                observation.cancelQuietly()
                triggers.cancelQuietly()
            }
        })
    }
}
