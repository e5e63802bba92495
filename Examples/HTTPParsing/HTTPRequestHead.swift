/// What the server needs from one request head: whether the connection stays open after the answer,
/// and how many body bytes follow the head.
public struct HTTPRequestHead: Equatable, Sendable {
    /// Whether the client keeps the connection open: HTTP/1.1 does unless it sends `Connection: close`,
    /// HTTP/1.0 does not unless it sends `Connection: keep-alive`.
    public var keepsAlive: Bool
    /// The `Content-Length`, 0 without one.
    public var contentLength: Int

    /// Makes a head from its parts (for tests).
    public init(keepsAlive: Bool, contentLength: Int = 0) {
        self.keepsAlive = keepsAlive
        self.contentLength = contentLength
    }

    /// Reads a head in place, with no copy and no allocation, checking it against `limits`.
    ///
    /// - Parameters:
    ///   - head: the request line and the header lines, without the blank line that ends the head.
    ///     Lines end with CRLF (a bare LF is accepted too); empty lines before the request line are
    ///     skipped.
    ///   - limits: ``HTTPRequestLimits/maximumHeaderCount`` and ``HTTPRequestLimits/maximumBodySize``
    ///     apply here; the head's size is checked by ``HTTPRequestParser``.
    /// - Throws: ``HTTPRequestError``: `malformed` for anything that is not an HTTP/1.0 or 1.1 head,
    ///   `headTooLarge`, `bodyTooLarge`, `unsupportedTransferEncoding`.
    public init(parsing head: UnsafeRawBufferPointer, limits: HTTPRequestLimits) throws(HTTPRequestError) {
        var lineStart = 0
        // Empty lines between pipelined requests are allowed before a request line (RFC 9112, 2.2).
        while lineStart < head.count, head[lineStart] == .carriageReturn || head[lineStart] == .lineFeed {
            lineStart += 1
        }
        var isRequestLine = true
        var headerCount = 0
        var contentLength: Int?
        keepsAlive = true
        while lineStart <= head.count {
            var lineEnd = lineStart
            while lineEnd < head.count, head[lineEnd] != .lineFeed { lineEnd += 1 }
            let nextLine = lineEnd + 1
            if lineEnd > lineStart, head[lineEnd - 1] == .carriageReturn { lineEnd -= 1 }
            let line = head[lineStart..<lineEnd]
            if isRequestLine {
                keepsAlive = try Self.parseRequestLine(line)
                isRequestLine = false
            } else {
                headerCount += 1
                guard headerCount <= limits.maximumHeaderCount else { throw .headTooLarge }
                let (name, value) = try Self.splitHeader(line)
                if Self.equalsIgnoringCase(name, "content-length") {
                    let length = try Self.parseContentLength(value, limit: limits.maximumBodySize)
                    // Two different lengths are how requests are smuggled past proxies (RFC 9112, 6.3).
                    guard contentLength == nil || contentLength == length else { throw .malformed }
                    contentLength = length
                } else if Self.equalsIgnoringCase(name, "transfer-encoding") {
                    throw .unsupportedTransferEncoding
                } else if Self.equalsIgnoringCase(name, "connection") {
                    if Self.contains(value, "keep-alive") { keepsAlive = true }
                    if Self.contains(value, "close") { keepsAlive = false }
                }
            }
            lineStart = nextLine
        }
        guard !isRequestLine else { throw .malformed }
        self.contentLength = contentLength ?? 0
    }

    // MARK: Lines

    /// Checks `method SP target SP HTTP/1.x`; returns whether the version keeps connections open.
    private static func parseRequestLine(_ line: Slice<UnsafeRawBufferPointer>) throws(HTTPRequestError) -> Bool {
        var index = line.startIndex
        let methodStart = index
        while index < line.endIndex, isTokenCharacter(line[index]) { index += 1 }
        guard index > methodStart, index < line.endIndex, line[index] == .space else { throw .malformed }
        index += 1
        let targetStart = index
        while index < line.endIndex, line[index] > .space, line[index] < .delete { index += 1 }
        guard index > targetStart, index < line.endIndex, line[index] == .space else { throw .malformed }
        index += 1
        let version = line[index...]
        guard version.count == 8, equals(version.prefix(7), "HTTP/1.") else { throw .malformed }
        switch version.last {
        case UInt8(ascii: "1"): return true
        case UInt8(ascii: "0"): return false
        default: throw .malformed
        }
    }

    /// Splits `name: value`, the value without the spaces around it.
    private static func splitHeader(
        _ line: Slice<UnsafeRawBufferPointer>
    ) throws(HTTPRequestError) -> (Slice<UnsafeRawBufferPointer>, Slice<UnsafeRawBufferPointer>) {
        var index = line.startIndex
        while index < line.endIndex, isTokenCharacter(line[index]) { index += 1 }
        // No name, a space before the colon, or a folded continuation line: all refused (RFC 9112, 5).
        guard index > line.startIndex, index < line.endIndex, line[index] == .colon else { throw .malformed }
        let name = line[line.startIndex..<index]
        var valueStart = index + 1
        var valueEnd = line.endIndex
        while valueStart < valueEnd, isWhitespace(line[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, isWhitespace(line[valueEnd - 1]) { valueEnd -= 1 }
        for byte in line[valueStart..<valueEnd] where byte < .space && byte != .tab || byte == .delete {
            throw .malformed
        }
        return (name, line[valueStart..<valueEnd])
    }

    /// One decimal number, overflow-safe: over `limit` (or over `Int.max`) is `bodyTooLarge`.
    private static func parseContentLength(
        _ value: Slice<UnsafeRawBufferPointer>, limit: Int
    ) throws(HTTPRequestError) -> Int {
        guard !value.isEmpty else { throw .malformed }
        var length = 0
        var isTooLarge = false
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { throw .malformed }
            guard !isTooLarge else { continue }
            let (times10, overflowed) = length.multipliedReportingOverflow(by: 10)
            let (sum, overflowedAgain) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            if overflowed || overflowedAgain || sum > limit {
                isTooLarge = true
            } else {
                length = sum
            }
        }
        if isTooLarge { throw .bodyTooLarge }
        return length
    }

    // MARK: Bytes

    /// RFC 9110's `tchar`: the characters of methods and header names.
    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool { byte == .space || byte == .tab }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    /// Whether `bytes` are `text` exactly.
    private static func equals(_ bytes: Slice<UnsafeRawBufferPointer>, _ text: StaticString) -> Bool {
        let pattern = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        return bytes.elementsEqual(pattern)
    }

    /// Whether `bytes` are `text` (ASCII, lowercase), ignoring case.
    private static func equalsIgnoringCase(_ bytes: Slice<UnsafeRawBufferPointer>, _ text: StaticString) -> Bool {
        let pattern = UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        return bytes.count == pattern.count && zip(bytes, pattern).allSatisfy { lowercased($0) == $1 }
    }

    /// Whether `text` (ASCII, lowercase) occurs in `bytes`, ignoring case.
    private static func contains(_ bytes: Slice<UnsafeRawBufferPointer>, _ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        var start = bytes.startIndex
        while start + count <= bytes.endIndex {
            if equalsIgnoringCase(bytes[start..<start + count], text) { return true }
            start += 1
        }
        return false
    }
}

extension UInt8 {
    static let tab = UInt8(ascii: "\t")
    static let lineFeed = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")
    static let space = UInt8(ascii: " ")
    static let colon = UInt8(ascii: ":")
    static let delete: UInt8 = 0x7F
}
