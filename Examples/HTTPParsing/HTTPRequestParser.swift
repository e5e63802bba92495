#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds the requests in the bytes of one connection, as they arrive in chunks of any size: each head
/// is checked as soon as it is complete, its body is skipped, and the request is handed on once the
/// last byte of its body has arrived (a server answers a request once, when it is complete: answered
/// at its head, a request whose body then stalls would also be told `408`); a request over the limits
/// ends the stream with the ``HTTPRequestError`` to answer.
///
/// Heads are parsed where the bytes lie; only a head cut in two by the network is copied, and never
/// more than ``HTTPRequestLimits/maximumHeadSize`` bytes of it. Every number is checked, so no input
/// can trap.
///
/// ```swift
/// var parser = HTTPRequestParser()
/// try parser.consume(chunk) { head in
///     answer(head)
///     return head.keepsAlive   // false: stop reading, the connection closes
/// }
/// ```
public struct HTTPRequestParser {
    /// The limits requests are checked against.
    public let limits: HTTPRequestLimits

    /// The start of a head that has not fully arrived.
    private var partialHead: [UInt8] = []
    /// Bytes of the body of the last request that have not arrived yet.
    private var bodyBytesToSkip = 0
    /// The head of the request whose body is arriving, handed on with the body's last byte.
    private var headAwaitingBody: HTTPRequestHead?

    /// Whether the parser reads no more: a request was refused, or a handler asked to stop.
    public private(set) var isFinished = false

    /// Whether the stream is between requests: no part of a head or body is pending.
    public var isBetweenRequests: Bool { partialHead.isEmpty && bodyBytesToSkip == 0 }

    /// Makes a parser for a new connection.
    public init(limits: HTTPRequestLimits = HTTPRequestLimits()) {
        self.limits = limits
    }

    /// Reads the next chunk of the stream, calling `onRequest` with the head of each request completed
    /// in it (head and body), in order. Once `onRequest` returns `false`, or a request is refused, the rest is ignored and
    /// ``isFinished`` is true.
    ///
    /// - Throws: the ``HTTPRequestError`` of the first refused request; the requests before it in the
    ///   chunk have been handed to `onRequest`.
    public mutating func consume(
        _ bytes: UnsafeRawBufferPointer, onRequest: (HTTPRequestHead) -> Bool
    ) throws(HTTPRequestError) {
        guard !isFinished, !bytes.isEmpty else { return }
        var input = bytes
        if bodyBytesToSkip > 0 {
            let skipped = min(bodyBytesToSkip, input.count)
            bodyBytesToSkip -= skipped
            input = UnsafeRawBufferPointer(rebasing: input[skipped...])
            if bodyBytesToSkip == 0, let head = headAwaitingBody {
                headAwaitingBody = nil
                if !onRequest(head) {
                    isFinished = true
                    return
                }
            }
            if input.isEmpty { return }
        }
        do throws(HTTPRequestError) {
            if partialHead.isEmpty {
                let consumed = try parseRequests(in: input, searchingFrom: 0, onRequest: onRequest)
                if !isFinished, consumed < input.count {
                    partialHead.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[consumed...]))
                }
            } else {
                // The end of the head may straddle the chunks: search again from three bytes back.
                let searchStart = max(0, partialHead.count - 3)
                var buffered: [UInt8] = []
                swap(&buffered, &partialHead)
                buffered.append(contentsOf: input)
                // `withUnsafeBytes` rethrows untyped errors: the typed one comes out as a `Result`.
                let consumed = try buffered.withUnsafeBytes { buffer in
                    Result { () throws(HTTPRequestError) in
                        try parseRequests(in: buffer, searchingFrom: searchStart, onRequest: onRequest)
                    }
                }.get()
                if !isFinished, consumed < buffered.count {
                    buffered.removeSubrange(..<consumed)
                    partialHead = buffered
                }
            }
        } catch {
            isFinished = true
            partialHead = []
            throw error
        }
    }

    /// Hands on every complete request in `buffer`; returns how many bytes they took.
    private mutating func parseRequests(
        in buffer: UnsafeRawBufferPointer, searchingFrom searchStart: Int, onRequest: (HTTPRequestHead) -> Bool
    ) throws(HTTPRequestError) -> Int {
        var offset = 0
        var searchStart = searchStart
        while offset < buffer.count, !isFinished {
            guard let headEnd = Self.endOfHead(in: buffer, from: max(offset, searchStart)) else {
                // The head, once complete, will be longer than what is here.
                if buffer.count - offset >= limits.maximumHeadSize { throw .headTooLarge }
                break
            }
            searchStart = 0
            guard headEnd + 4 - offset <= limits.maximumHeadSize else { throw .headTooLarge }
            let head = try HTTPRequestHead(
                parsing: UnsafeRawBufferPointer(rebasing: buffer[offset..<headEnd]), limits: limits)
            offset = headEnd + 4
            if head.contentLength > 0 {
                let available = min(head.contentLength, buffer.count - offset)
                offset += available
                bodyBytesToSkip = head.contentLength - available
                if bodyBytesToSkip > 0 {
                    // The rest of the body is in later chunks: the request is handed on with its end.
                    headAwaitingBody = head
                    break
                }
            }
            if !onRequest(head) { isFinished = true }
        }
        return offset
    }

    /// The offset of the `\r\n\r\n` that ends a head, searching from `start`, if it is there.
    private static func endOfHead(in buffer: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard let base = buffer.baseAddress else { return nil }
        var offset = start
        while offset + 4 <= buffer.count {
            guard let found = memchr(base + offset, Int32(UInt8.carriageReturn), buffer.count - offset - 3) else {
                return nil
            }
            let candidate = base.distance(to: UnsafeRawPointer(found))
            if buffer[candidate + 1] == .lineFeed, buffer[candidate + 2] == .carriageReturn,
               buffer[candidate + 3] == .lineFeed {
                return candidate
            }
            offset = candidate + 1
        }
        return nil
    }
}
