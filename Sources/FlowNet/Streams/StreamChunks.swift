import Flow

/// The bytes of a ``StreamConnection`` as an `AsyncSequence` of chunks; see ``StreamConnection/chunks``.
///
/// Each step waits for one ``StreamConnection/read()``, so nothing is read ahead of the consumer.
/// Cancelling the task does not interrupt a step that is waiting; close the connection for that.
public struct StreamChunks: AsyncSequence, Sendable {
    /// A chunk of bytes as it arrived.
    public typealias Element = [UInt8]

    let connection: StreamConnection

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(connection: connection)
    }

    /// Reads chunk after chunk.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: StreamConnection

        /// The next chunk, or `nil` once the peer has closed its side.
        public mutating func next() async throws -> [UInt8]? {
            try await connection.nextChunk(isolation: nil)
        }

        /// The next chunk, waited for on the caller's actor (a `for try await` loop's own), so that a
        /// `@MainActor` loop reads without changing executors for each chunk.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
            try await connection.nextChunk(isolation: actor)
        }
    }
}

/// The name ``StreamChunks`` had when only TCP connections had chunks.
public typealias TCPChunks = StreamChunks
