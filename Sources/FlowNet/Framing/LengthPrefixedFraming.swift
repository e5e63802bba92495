import Flow

/// How a frame's length is written before it: its size in bytes and its byte order. The length
/// counts the frame's bytes, not the prefix's.
public struct LengthPrefix: Sendable, Equatable {
    /// The prefix's size in bytes: 1, 2, 4 or 8.
    public let byteCount: Int
    /// Whether the most significant byte comes first (network byte order).
    public let isBigEndian: Bool

    /// One byte: frames of up to 255 bytes.
    public static let uint8 = LengthPrefix(byteCount: 1, isBigEndian: true)
    /// Two bytes, most significant first.
    public static let uint16BigEndian = LengthPrefix(byteCount: 2, isBigEndian: true)
    /// Two bytes, least significant first.
    public static let uint16LittleEndian = LengthPrefix(byteCount: 2, isBigEndian: false)
    /// Four bytes, most significant first: the usual choice.
    public static let uint32BigEndian = LengthPrefix(byteCount: 4, isBigEndian: true)
    /// Four bytes, least significant first.
    public static let uint32LittleEndian = LengthPrefix(byteCount: 4, isBigEndian: false)
    /// Eight bytes, most significant first.
    public static let uint64BigEndian = LengthPrefix(byteCount: 8, isBigEndian: true)

    /// The largest length the prefix can write.
    public var largestLength: UInt64 {
        byteCount == 8 ? UInt64.max : (UInt64(1) << (8 * byteCount)) - 1
    }

    /// The prefix's bytes for `length`, which must not exceed ``largestLength``.
    func encode(_ length: Int) -> [UInt8] {
        let value = UInt64(length)
        let bytes = (0..<byteCount).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        return isBigEndian ? bytes.reversed() : bytes
    }
}

extension StreamConnection {
    /// The connection's bytes as length-prefixed frames, as an `AsyncSequence` of byte arrays.
    ///
    /// ```swift
    /// for try await frame in connection.frames(lengthPrefix: .uint32BigEndian, maximumLength: 1 << 20) {
    ///     connection.writeFrame(handle(frame), lengthPrefix: .uint32BigEndian)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - lengthPrefix: how each frame's length is written before it.
    ///   - maximumLength: the longest frame accepted, in bytes, at least 0. A prefix announcing more
    ///     ends the sequence with ``FramingError/frameTooLong(length:maximumLength:)`` before any of
    ///     the frame is read, so that a peer cannot make the reader allocate more than this. A
    ///     negative maximum stops the program with a message.
    ///
    /// Back-pressure as for ``lines(maximumLength:)``: a chunk is read only when a frame is asked for
    /// and not already at hand. The peer closing its side between frames ends the sequence; closing
    /// it inside a frame (or its prefix) fails it with
    /// ``FramingError/endOfStreamInsideFrame(receivedBytes:)``, never with a shorter frame. Bytes the
    /// sequence took from the socket after the last frame it handed out stay with the connection for
    /// the next reader, as with ``lines(maximumLength:)``.
    public func frames(lengthPrefix: LengthPrefix, maximumLength: Int) -> StreamFrames {
        LengthPrefixedSplitter.checkMaximumLength(maximumLength, caller: "frames(lengthPrefix:maximumLength:)")
        return StreamFrames(connection: self, lengthPrefix: lengthPrefix, maximumLength: maximumLength)
    }

    /// The connection's frames, as ``frames(lengthPrefix:maximumLength:)`` reads them, as a finite
    /// signal: each frame as a value, then the end (with a ``FramingError`` or the read error if it
    /// failed). Values and the end arrive on the connection's loop; disposing of the listener stops
    /// the reads. A negative `maximumLength` stops the program with a message, as for
    /// ``frames(lengthPrefix:maximumLength:)``.
    ///
    /// ```swift
    /// bag += connection.frameSignal(lengthPrefix: .uint16BigEndian, maximumLength: 4096).onValue { frame in
    ///     print("a frame of \(frame.count) bytes")
    /// }
    /// ```
    public func frameSignal(lengthPrefix: LengthPrefix, maximumLength: Int) -> FiniteSignal<[UInt8]> {
        LengthPrefixedSplitter.checkMaximumLength(maximumLength, caller: "frameSignal(lengthPrefix:maximumLength:)")
        return framedSignal { LengthPrefixedSplitter(lengthPrefix: lengthPrefix, maximumLength: maximumLength) }
    }

    /// Writes `frame` after its length, as ``frames(lengthPrefix:maximumLength:)`` reads it, in one
    /// write. Fails with ``FramingError/frameTooLong(length:maximumLength:)`` (writing nothing) if
    /// the prefix cannot hold the frame's length.
    ///
    /// ```swift
    /// connection.writeFrame(Array("hello".utf8), lengthPrefix: .uint32BigEndian)
    /// ```
    @discardableResult
    public func writeFrame(_ frame: [UInt8], lengthPrefix: LengthPrefix) -> Future<Void> {
        guard UInt64(frame.count) <= lengthPrefix.largestLength else {
            let largest = Int(clamping: lengthPrefix.largestLength)
            return Future(error: FramingError.frameTooLong(length: frame.count, maximumLength: largest))
        }
        return write(lengthPrefix.encode(frame.count) + frame)
    }
}

/// The length-prefixed frames of a ``StreamConnection``; see
/// ``StreamConnection/frames(lengthPrefix:maximumLength:)``.
///
/// Each step that needs bytes waits for one ``StreamConnection/read()``, so nothing is read ahead of
/// the consumer. Cancelling the task does not interrupt a step that is waiting; close the connection
/// for that.
public struct StreamFrames: AsyncSequence, Sendable {
    /// A frame's bytes, without its prefix.
    public typealias Element = [UInt8]

    let connection: StreamConnection
    let lengthPrefix: LengthPrefix
    let maximumLength: Int

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator {
        Iterator(
            connection: connection,
            splitter: SharedSplitter(LengthPrefixedSplitter(lengthPrefix: lengthPrefix, maximumLength: maximumLength))
        )
    }

    /// Reads frame after frame.
    public struct Iterator: AsyncIteratorProtocol {
        let connection: StreamConnection
        var splitter: SharedSplitter<LengthPrefixedSplitter>
        var isFinished = false

        /// The next frame, or `nil` once the peer has closed its side between two frames.
        public mutating func next() async throws -> [UInt8]? {
            try await nextFrame(connection: connection, splitter: &splitter, isFinished: &isFinished, isolation: nil)
        }

        /// The next frame, waited for on the caller's actor (a `for try await` loop's own), so that a
        /// `@MainActor` loop reads without changing executors for each frame.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
            try await nextFrame(connection: connection, splitter: &splitter, isFinished: &isFinished, isolation: actor)
        }
    }
}

/// Cuts bytes into frames, each after its length.
package struct LengthPrefixedSplitter: FrameSplitter {
    let lengthPrefix: LengthPrefix
    let maximumLength: Int
    private var pending = PendingBytes()

    package init(lengthPrefix: LengthPrefix, maximumLength: Int) {
        self.lengthPrefix = lengthPrefix
        self.maximumLength = maximumLength
    }

    /// Stops the program with a message naming `caller` unless `maximumLength` is at least 0: checked
    /// where the reader is made, not when the first prefix arrives inside the loop's read callback.
    static func checkMaximumLength(_ maximumLength: Int, caller: String) {
        misusePrecondition(
            maximumLength >= 0,
            "StreamConnection.\(caller): the maximum length must not be negative, not \(maximumLength)")
    }

    package mutating func append(_ chunk: [UInt8]) {
        pending.append(chunk)
    }

    package mutating func next() throws -> [UInt8]? {
        let prefixSize = lengthPrefix.byteCount
        guard pending.count >= prefixSize else { return nil }
        var length: UInt64 = 0
        for offset in 0..<prefixSize {
            let byte = UInt64(pending[lengthPrefix.isBigEndian ? offset : prefixSize - 1 - offset])
            length = length << 8 | byte
        }
        guard length <= UInt64(maximumLength) else {
            throw FramingError.frameTooLong(length: Int(clamping: length), maximumLength: maximumLength)
        }
        // `length` is at most `maximumLength`, an `Int`; compared with what is left after the prefix,
        // so that no sum of peer-controlled lengths can overflow.
        let frameLength = Int(length)
        guard pending.count - prefixSize >= frameLength else { return nil }
        let start = pending.start + prefixSize
        let frame = Array(pending.bytes[start..<start + frameLength])
        pending.consume(prefixSize + frameLength)
        return frame
    }

    package mutating func finish() throws -> [UInt8]? {
        guard pending.count == 0 else { throw FramingError.endOfStreamInsideFrame(receivedBytes: pending.count) }
        return nil
    }

    package mutating func takeUnread() -> PendingBytes {
        pending.takeAll()
    }

    package var unreadCount: Int { pending.count }

    package mutating func adopt(_ bytes: PendingBytes) {
        pending = bytes
    }
}
