import Flow

extension StreamConnection {
    /// The connection's bytes as lines, ending with `\n` or `\r\n` (the ending is not part of the
    /// line), as an `AsyncSequence` of `String`s decoded as UTF-8 (invalid bytes become U+FFFD).
    ///
    /// ```swift
    /// for try await line in connection.lines(maximumLength: 1024) {
    ///     connection.write("you said: \(line)\r\n")
    /// }
    /// ```
    ///
    /// - Parameter maximumLength: the longest line accepted, in bytes, without its ending. A peer that
    ///   sends a longer one ends the sequence with ``FramingError/lineTooLong(maximumLength:)`` as
    ///   soon as the limit is passed, so that it cannot make the reader hold more than this.
    ///
    /// Back-pressure: the sequence reads from the socket with ``read()``, one chunk whenever its
    /// lines have all been taken, so a consumer that stops iterating stops the socket's reads. Bytes
    /// after the last line ending, when the peer closes its side, make a last line. A read error
    /// ends the sequence with that error. The connection stays open when the sequence ends. Bytes the
    /// sequence took from the socket after the last line it handed out stay with the connection, so
    /// another reader can take over (``read()``, ``chunks``, ``frames(lengthPrefix:maximumLength:)``,
    /// another `lines`): a greeting line and the frames after it may arrive in one chunk. A handler
    /// set with ``onRead(_:)`` cannot follow a sequence.
    public func lines(maximumLength: Int = 16 * 1024) -> StreamLines {
        StreamLines(connection: self, maximumLength: maximumLength)
    }

    /// The connection's lines, as ``lines(maximumLength:)`` reads them, as a finite signal: each
    /// line as a value, then the end (with ``FramingError/lineTooLong(maximumLength:)`` or the read
    /// error if it failed). Values and the end arrive on the connection's loop.
    ///
    /// ```swift
    /// bag += connection.lineSignal(maximumLength: 1024).onEvent { event in
    ///     switch event {
    ///     case .value(let line): connection.write("you said: \(line)\r\n")
    ///     case .end: connection.close()
    ///     }
    /// }
    /// ```
    ///
    /// Each listener reads the connection (one listener at a time); the next chunk is read once the
    /// lines of the last one were delivered, and disposing of the listener stops the reads.
    public func lineSignal(maximumLength: Int = 16 * 1024) -> FiniteSignal<String> {
        framedSignal { LineSplitter(maximumLength: maximumLength) }
    }
}

/// The lines of a ``StreamConnection``; see ``StreamConnection/lines(maximumLength:)``.
///
/// Each step that needs bytes waits for one ``StreamConnection/read()``, so nothing is read ahead of
/// the consumer. Cancelling the task does not interrupt a step that is waiting; close the connection
/// for that.
public struct StreamLines: AsyncSequence, Sendable {
    /// A line, without its `\n` or `\r\n`.
    public typealias Element = String

    let connection: StreamConnection
    let maximumLength: Int

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(connection: connection, splitter: SharedSplitter(LineSplitter(maximumLength: maximumLength)))
    }

    /// Reads line after line.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: StreamConnection
        var splitter: SharedSplitter<LineSplitter>
        var isFinished = false

        /// The next line, or `nil` once the peer has closed its side and every line was read.
        public mutating func next() async throws -> String? {
            try await nextFrame(connection: connection, splitter: &splitter, isFinished: &isFinished, isolation: nil)
        }

        /// The next line, waited for on the caller's actor (a `for try await` loop's own), so that a
        /// `@MainActor` loop reads without changing executors for each line.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> String? {
            try await nextFrame(connection: connection, splitter: &splitter, isFinished: &isFinished, isolation: actor)
        }
    }
}

/// The step both framed sequences take: a frame from the bytes the sequence holds (without leaving
/// the consumer's thread), or one cut on the connection's loop from the bytes given back and from new
/// chunks (see `StreamConnection.nextFrame(cutBy:idleTimeout:isolation:)`), waited for on `isolation`,
/// the consumer's actor. The timed sequences pass their `idleTimeout`.
func nextFrame<Core: FrameSplitter>(
    connection: StreamConnection, splitter: inout SharedSplitter<Core>, isFinished: inout Bool,
    idleTimeout: Double? = nil, isolation: isolated (any Actor)?
) async throws -> Core.Frame? {
    guard !isFinished else { return nil }
    do {
        // The connection may have claimed these bytes for another reader meanwhile: then there is no
        // frame here, and the loop hands them back first.
        if let frame = try splitter.next() { return frame }
        guard
            let frame = try await connection.nextFrame(
                cutBy: splitter, idleTimeout: idleTimeout, isolation: isolation)
        else {
            isFinished = true
            return nil
        }
        return frame
    } catch {
        isFinished = true
        throw error
    }
}

/// Cuts bytes into lines at `\n`, dropping a `\r` right before it.
package struct LineSplitter: FrameSplitter {
    let maximumLength: Int
    private var pending = PendingBytes()
    /// How far from the start of `pending` no `\n` was found, so that a line trickled in byte by byte
    /// is scanned once.
    private var scanned = 0

    package init(maximumLength: Int) {
        self.maximumLength = maximumLength
    }

    package mutating func append(_ chunk: [UInt8]) {
        pending.append(chunk)
    }

    package mutating func next() throws -> String? {
        let count = pending.count
        let start = pending.start
        let found: Int? = pending.bytes.withUnsafeBufferPointer { buffer in
            var index = start + scanned
            let end = start + count
            while index < end {
                if buffer[index] == UInt8(ascii: "\n") { return index - start }
                index += 1
            }
            return nil
        }
        guard let index = found else {
            scanned = count
            // A line of exactly the maximum may be waiting for the `\n` of its `\r\n`.
            guard count > 0, count > maximumLength else { return nil }
            let waitingForNewline = count == maximumLength + 1 && pending[count - 1] == UInt8(ascii: "\r")
            if !waitingForNewline { throw FramingError.lineTooLong(maximumLength: maximumLength) }
            return nil
        }
        var length = index
        if length > 0, pending[length - 1] == UInt8(ascii: "\r") { length -= 1 }
        guard length <= maximumLength else { throw FramingError.lineTooLong(maximumLength: maximumLength) }
        let line = pending.bytes.withUnsafeBufferPointer { buffer in
            String(decoding: UnsafeBufferPointer(rebasing: buffer[pending.start..<pending.start + length]), as: UTF8.self)
        }
        pending.consume(index + 1)
        scanned = 0
        return line
    }

    package mutating func finish() throws -> String? {
        // Called once `next()` returned nil: what is left has no `\n`, and is no longer than allowed.
        let count = pending.count
        guard count > 0 else { return nil }
        var length = count
        if pending[length - 1] == UInt8(ascii: "\r") { length -= 1 }
        let line = pending.bytes.withUnsafeBufferPointer { buffer in
            String(decoding: UnsafeBufferPointer(rebasing: buffer[pending.start..<pending.start + length]), as: UTF8.self)
        }
        pending.consume(count)
        return line
    }

    package mutating func takeUnread() -> PendingBytes {
        scanned = 0
        return pending.takeAll()
    }

    package var unreadCount: Int { pending.count }

    package mutating func adopt(_ bytes: PendingBytes) {
        pending = bytes
        scanned = 0
    }
}
