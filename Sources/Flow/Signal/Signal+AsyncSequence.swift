extension SignalProvider {
    /// The values signalled while a `for await` loop runs over them, as an `AsyncSequence`.
    ///
    /// Listening starts when the loop starts (on ``Scheduler/none``: values are handed to the loop
    /// from whichever thread signals them, in order) and values wait in a buffer until the loop takes
    /// them. The loop ends when a finite signal ends (with or without an error); breaking out of the
    /// loop or cancelling its task stops listening.
    ///
    /// ```swift
    /// for await chunk in connection.chunks.values {
    ///     process(chunk)
    /// }
    /// ```
    ///
    /// Like `onValue`, it does not start with a readable signal's current value: use
    /// `atOnce().values` for that.
    public var values: SignalValues<Value> {
        let signal = providedSignal
        return SignalValues(listen: { callback in signal.listen(on: .none, callback) })
    }
}

/// A signal's values as an `AsyncSequence`: see ``SignalProvider/values``.
public struct SignalValues<Value: Sendable>: AsyncSequence, Sendable {
    /// The signal's values.
    public typealias Element = Value

    let listen: @Sendable (@escaping @Sendable (EventType<Value>) -> Void) -> Disposable

    /// Starts listening and returns the iterator that takes the values.
    public func makeAsyncIterator() -> AsyncIterator {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self)
        let listener = listen { eventType in
            switch eventType {
            case .initial: break
            case .event(.value(let value)): continuation.yield(value)
            case .event(.end): continuation.finish()
            }
        }
        continuation.onTermination = { _ in listener.dispose() }
        return AsyncIterator(base: stream.makeAsyncIterator(), listening: ListeningToken(listener))
    }

    /// Takes a signal's values one at a time; letting go of it stops listening.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Value>.Iterator
        let listening: ListeningToken

        /// The next value, or `nil` once a finite signal ended or the task was cancelled.
        public mutating func next() async -> Value? {
            await base.next()
        }

        /// The next value, waited for on the caller's actor (a `for await` loop's own).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Value? {
            await base.next(isolation: actor)
        }
    }

    /// Stops listening when the iterator holding it goes away (a `break` out of the loop).
    final class ListeningToken: Sendable {
        private let listener: Disposable

        init(_ listener: Disposable) { self.listener = listener }

        deinit { listener.dispose() }
    }
}
