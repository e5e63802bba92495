import Flow

/// The bytes of a ``TCPConnection`` as an `AsyncSequence` of chunks; see ``TCPConnection/chunks``.
///
/// Each step waits for one ``TCPConnection/read()``, so nothing is read ahead of the consumer.
/// Cancelling the task does not interrupt a step that is waiting; close the connection for that.
public struct TCPChunks: AsyncSequence, Sendable {
    /// A chunk of bytes as it arrived.
    public typealias Element = [UInt8]

    let connection: TCPConnection

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(connection: connection)
    }

    /// Reads chunk after chunk.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: TCPConnection

        /// The next chunk, or `nil` once the peer has closed its side.
        public mutating func next() async throws -> [UInt8]? {
            let connection = connection
            return try await withCheckedThrowingContinuation { continuation in
                connection.read().onResult(on: .none) { result in
                    continuation.resume(with: result)
                }
            }
        }
    }
}
