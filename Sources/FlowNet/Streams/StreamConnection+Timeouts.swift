import Flow

/// Why a read with a timeout gave up.
public enum StreamTimeoutError: Error, Hashable, CustomStringConvertible {
    /// No byte came for `seconds` while a read waited: the peer is idle, or gone without closing.
    case idle(seconds: Double)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .idle(let seconds): return "no bytes came for \(seconds) s"
        }
    }
}

extension StreamConnection {
    /// Reads the next chunk like ``read()``, or fails with ``StreamTimeoutError/idle(seconds:)`` if
    /// none comes within `timeout` seconds, on the connection's loop timer (or its
    /// ``timeoutScheduler``'s). Callable from any thread.
    ///
    /// Nothing is lost to a timeout: bytes that come after it go to the next read. The connection
    /// stays open; close it, or read again, as the protocol wants.
    ///
    /// ```swift
    /// connection.read(timeout: 30).onResult { result in
    ///     if case .failure(StreamTimeoutError.idle) = result { connection.close() }
    /// }
    /// ```
    ///
    /// - Parameter timeout: seconds to wait; must be finite and not negative.
    public func read(timeout: Double) -> Future<[UInt8]?> {
        Self.validateTimeout(timeout, "read(timeout:)")
        return read(timeout: timeout, claimingHeldBytesExcept: nil)
    }

    /// ``read(timeout:)`` for `reader`, a framed sequence reading on, as `read(claimingHeldBytesExcept:)`.
    func read(timeout: Double, claimingHeldBytesExcept reader: HeldBytes?) -> Future<[UInt8]?> {
        let result = PendingResult<[UInt8]?>()
        // Observing the read through a future of its own: cancelling that future at the deadline
        // leaves the read with no observer, which cancels it and takes it off the waiting reads.
        let observed = read(claimingHeldBytesExcept: reader).onResult(on: .none) { read in result.complete(read) }
        // On the timeouts' scheduler (the loop's by default); another one's timer may fire on any
        // thread, which the result and the read's future allow.
        let deadline = (timedReadScheduler.withLock { $0 } ?? loop.scheduler).async(after: timeout) {
            guard !result.isCompleted else { return }
            result.fail(StreamTimeoutError.idle(seconds: timeout))
            observed.cancel()
        }
        // A caller that stops waiting cancels the read too, so that it takes no bytes a later read
        // should get.
        return result.future(onCancel: { observed.cancel() }).always(on: .none) { deadline.dispose() }
    }

    /// Stops the program with a message naming `caller` unless `timeout` is a finite, non-negative
    /// number of seconds.
    static func validateTimeout(_ timeout: Double, _ caller: String) {
        misusePrecondition(
            timeout.isFinite && timeout >= 0,
            "\(Self.self).\(caller): the timeout must be a finite, non-negative number of seconds, not \(timeout)")
    }

    /// The connection's lines as ``lines(maximumLength:)`` reads them, with an idle timeout: a step
    /// that waits more than `idleTimeout` seconds for bytes ends the sequence with
    /// ``StreamTimeoutError/idle(seconds:)``. The time a consumer spends on a line does not count.
    ///
    /// Like the untimed sequences, it reads no further ahead than the chunk its line is in: a reader
    /// that takes over after it (`lines()`, ``read()``, another timed sequence) gets the bytes after
    /// the last line it handed out, even after the timeout.
    ///
    /// ```swift
    /// do {
    ///     for try await line in connection.lines(maximumLength: 1024, idleTimeout: 30) {
    ///         connection.write("you said: \(line)\r\n")
    ///     }
    /// } catch StreamTimeoutError.idle {
    ///     connection.write("bye: idle too long\r\n")
    /// }
    /// connection.close()
    /// ```
    ///
    /// - Parameters:
    ///   - maximumLength: the longest line accepted, in bytes, as for ``lines(maximumLength:)``.
    ///   - idleTimeout: seconds a step may wait for bytes; must be finite and not negative.
    public func lines(maximumLength: Int = 16 * 1024, idleTimeout: Double) -> TimedStreamLines {
        Self.validateTimeout(idleTimeout, "lines(maximumLength:idleTimeout:)")
        return TimedStreamLines(connection: self, maximumLength: maximumLength, idleTimeout: idleTimeout)
    }

    /// The connection's length-prefixed frames as ``frames(lengthPrefix:maximumLength:)`` reads them,
    /// with an idle timeout: a step that waits more than `idleTimeout` seconds for bytes ends the
    /// sequence with ``StreamTimeoutError/idle(seconds:)``.
    ///
    /// ```swift
    /// for try await frame in connection.frames(lengthPrefix: .uint32BigEndian, maximumLength: 1 << 20, idleTimeout: 60) {
    ///     connection.writeFrame(frame, lengthPrefix: .uint32BigEndian)
    /// }
    /// ```
    public func frames(lengthPrefix: LengthPrefix, maximumLength: Int, idleTimeout: Double) -> TimedStreamFrames {
        Self.validateTimeout(idleTimeout, "frames(lengthPrefix:maximumLength:idleTimeout:)")
        return TimedStreamFrames(
            connection: self, lengthPrefix: lengthPrefix, maximumLength: maximumLength, idleTimeout: idleTimeout)
    }

    /// The connection's bytes as ``chunks`` reads them, with an idle timeout: a step that waits more
    /// than `idleTimeout` seconds ends the sequence with ``StreamTimeoutError/idle(seconds:)``.
    ///
    /// ```swift
    /// for try await chunk in connection.chunks(idleTimeout: 10) { print("got \(chunk.count) bytes") }
    /// ```
    public func chunks(idleTimeout: Double) -> TimedStreamChunks {
        Self.validateTimeout(idleTimeout, "chunks(idleTimeout:)")
        return TimedStreamChunks(connection: self, idleTimeout: idleTimeout)
    }

    /// Reads the next chunk for a timed `AsyncSequence` step, waiting on `isolation` (the consumer's
    /// actor) as `nextChunk(isolation:)` does: a main-actor consumer's wait holds the main loop, so
    /// ``EventLoop/run()`` does not return before the consumer has the chunk or the timeout's error.
    func nextChunk(timeout: Double, isolation: isolated (any Actor)?) async throws -> [UInt8]? {
        let isMainActorWait = EventLoop.beginMainActorWait(isolation)
        defer { EventLoop.endMainActorWait(isMainActorWait) }
        return try await withCheckedThrowingContinuation(isolation: isolation) { continuation in
            read(timeout: timeout).onResult(on: .none) { result in
                continuation.resume(with: result)
            }
        }
    }
}

/// The lines of a ``StreamConnection`` with an idle timeout; see
/// ``StreamConnection/lines(maximumLength:idleTimeout:)``.
public struct TimedStreamLines: AsyncSequence, Sendable {
    /// A line, without its `\n` or `\r\n`.
    public typealias Element = String

    let connection: StreamConnection
    let maximumLength: Int
    let idleTimeout: Double

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(
            connection: connection, splitter: SharedSplitter(LineSplitter(maximumLength: maximumLength)),
            idleTimeout: idleTimeout)
    }

    /// Reads line after line, each wait for bytes bounded by the idle timeout.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: StreamConnection
        var splitter: SharedSplitter<LineSplitter>
        let idleTimeout: Double
        var isFinished = false

        /// The next line, or `nil` once the peer has closed its side and every line was read.
        public mutating func next() async throws -> String? {
            try await nextFrame(
                connection: connection, splitter: &splitter, isFinished: &isFinished, idleTimeout: idleTimeout,
                isolation: nil)
        }

        /// The next line, waited for on the caller's actor (a `for try await` loop's own), so that a
        /// `@MainActor` loop reads without changing executors for each line.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> String? {
            try await nextFrame(
                connection: connection, splitter: &splitter, isFinished: &isFinished, idleTimeout: idleTimeout,
                isolation: actor)
        }
    }
}

/// The length-prefixed frames of a ``StreamConnection`` with an idle timeout; see
/// ``StreamConnection/frames(lengthPrefix:maximumLength:idleTimeout:)``.
public struct TimedStreamFrames: AsyncSequence, Sendable {
    /// A frame's bytes, without its prefix.
    public typealias Element = [UInt8]

    let connection: StreamConnection
    let lengthPrefix: LengthPrefix
    let maximumLength: Int
    let idleTimeout: Double

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(
            connection: connection,
            splitter: SharedSplitter(LengthPrefixedSplitter(lengthPrefix: lengthPrefix, maximumLength: maximumLength)),
            idleTimeout: idleTimeout)
    }

    /// Reads frame after frame, each wait for bytes bounded by the idle timeout.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: StreamConnection
        var splitter: SharedSplitter<LengthPrefixedSplitter>
        let idleTimeout: Double
        var isFinished = false

        /// The next frame, or `nil` once the peer has closed its side between two frames.
        public mutating func next() async throws -> [UInt8]? {
            try await nextFrame(
                connection: connection, splitter: &splitter, isFinished: &isFinished, idleTimeout: idleTimeout,
                isolation: nil)
        }

        /// The next frame, waited for on the caller's actor (a `for try await` loop's own), so that a
        /// `@MainActor` loop reads without changing executors for each frame.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
            try await nextFrame(
                connection: connection, splitter: &splitter, isFinished: &isFinished, idleTimeout: idleTimeout,
                isolation: actor)
        }
    }
}

/// The chunks of a ``StreamConnection`` with an idle timeout; see ``StreamConnection/chunks(idleTimeout:)``.
public struct TimedStreamChunks: AsyncSequence, Sendable {
    /// A chunk of bytes as it arrived.
    public typealias Element = [UInt8]

    let connection: StreamConnection
    let idleTimeout: Double

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(connection: connection, idleTimeout: idleTimeout)
    }

    /// Reads chunk after chunk, each wait bounded by the idle timeout.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: StreamConnection
        let idleTimeout: Double

        /// The next chunk, or `nil` once the peer has closed its side.
        public mutating func next() async throws -> [UInt8]? {
            try await connection.nextChunk(timeout: idleTimeout, isolation: nil)
        }

        /// The next chunk, waited for on the caller's actor (a `for try await` loop's own), so that a
        /// `@MainActor` loop reads without changing executors for each chunk.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
            try await connection.nextChunk(timeout: idleTimeout, isolation: actor)
        }
    }
}
