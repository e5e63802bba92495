import Flow

/// The datagrams a ``UDPSocket`` receives, as an `AsyncSequence` that ends when the socket closes;
/// see ``UDPSocket/datagrams``.
///
/// A `@MainActor` consumer waits on the main actor (``Iterator/next(isolation:)``), and its wait holds
/// the main loop: `EventLoop.run()` does not return while the consumer waits for the next datagram or
/// for the end, so the code after its `for await` loop runs.
public struct UDPDatagrams: AsyncSequence, Sendable {
    /// A datagram with its sender.
    public typealias Element = Datagram
    /// Receiving ends with the socket; errors go to ``UDPSocket/onReceiveError(_:)``.
    public typealias Failure = Never

    let stream: AsyncStream<Datagram>

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator())
    }

    /// Hands out datagram after datagram, in the order they came.
    public struct Iterator: AsyncIteratorProtocol {
        var base: AsyncStream<Datagram>.Iterator

        /// The next datagram, or `nil` once the socket has closed (or the task was cancelled).
        public mutating func next() async -> Datagram? {
            await base.next()
        }

        /// The next datagram, waited for on the caller's actor (a `for await` loop's own), so that a
        /// `@MainActor` loop receives without changing executors for each datagram.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Datagram? {
            let isMainActorWait = EventLoop.beginMainActorWait(actor)
            defer { EventLoop.endMainActorWait(isMainActorWait) }
            return await base.next(isolation: actor)
        }
    }
}

extension UDPSocket {
    /// Sends `bytes` as one datagram to `address` (or, with `nil`, to the peer of a connected socket)
    /// and waits until libuv has handed it to the kernel, from async code: as
    /// `try await send(bytes, to: address).get()`. Throws the send's error, such as
    /// `EMSGSIZE: message too long`, or `ECANCELED` if the socket closes first. It waits on the
    /// caller's executor: a main-actor caller's wait holds the main loop, as `Future.get()`'s does.
    ///
    /// ```swift
    /// for await datagram in socket.datagrams {
    ///     try await socket.sendAsync(datagram.bytes, to: datagram.sender)
    /// }
    /// ```
    public nonisolated(nonsending) func sendAsync(_ bytes: [UInt8], to address: SocketAddress? = nil) async throws {
        try await send(bytes, to: address).get()
    }

    /// Sends `bytes` without copying them again, from async code; see ``sendAsync(_:to:)-([UInt8],_)``.
    public nonisolated(nonsending) func sendAsync(
        _ bytes: SharedBytes, to address: SocketAddress? = nil
    ) async throws {
        try await send(bytes, to: address).get()
    }
}
