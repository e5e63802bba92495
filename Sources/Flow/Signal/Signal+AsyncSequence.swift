extension SignalProvider {
    /// The values signalled from now on, as an `AsyncSequence`: listening starts when this property
    /// is read, and values are buffered until the loop takes them. The sequence finishes when a finite
    /// signal ends (with or without an error); breaking out of the loop or cancelling its task stops
    /// listening.
    ///
    /// ```swift
    /// for await chunk in connection.chunks.values {
    ///     process(chunk)
    /// }
    /// ```
    ///
    /// Like `onValue`, it does not start with a readable signal's current value: use
    /// `atOnce().values` for that.
    public var values: AsyncStream<Value> {
        let signal = providedSignal
        return AsyncStream { continuation in
            let listener = signal.listen(on: .none) { eventType in
                switch eventType {
                case .initial: break
                case .event(.value(let value)): continuation.yield(value)
                case .event(.end): continuation.finish()
                }
            }
            continuation.onTermination = { _ in listener.dispose() }
        }
    }
}
