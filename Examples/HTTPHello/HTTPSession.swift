import Flow
import FlowNet

#if canImport(Glibc)
import Glibc
#endif

/// The canned responses, built once: `keepAlive[n - 1]` answers `n` pipelined requests in one write.
enum Responses {
    static let body = "Hello, World!"

    private static func response(closing: Bool) -> String {
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n"
            + (closing ? "Connection: close\r\n" : "") + "\r\n" + body
    }

    static let keepAlive: [SharedBytes] = (1...maximumBatch).map {
        SharedBytes(String(repeating: response(closing: false), count: $0))
    }
    static let closing = SharedBytes(response(closing: true))
    static let maximumBatch = 32
}

/// One client connection: finds complete request heads, answers each with the canned response, keeps
/// the connection open unless the client asks otherwise.
///
/// Requests are parsed just enough: the end of the head (`\r\n\r\n`), the HTTP version, `Connection`
/// and `Content-Length` (a body is skipped). Bytes are parsed where libuv put them; only a request
/// cut in two by the network is copied, into `partialHead`.
final class HTTPSession {
    private let connection: TCPConnection
    private var partialHead: [UInt8] = []
    private var bodyBytesToSkip = 0
    private var isFinished = false

    /// A head longer than this is refused (the connection is closed).
    private static let maximumHeadSize = 16 * 1024

    init(connection: TCPConnection) {
        self.connection = connection
    }

    func start() {
        connection.onRead { [self] event in
            switch event {
            case .bytes(let bytes): received(bytes)
            case .endOfStream: finish()
            case .failed: connection.close()
            }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard !isFinished else { return }
        var input = bytes
        if bodyBytesToSkip > 0 {
            let skipped = min(bodyBytesToSkip, input.count)
            bodyBytesToSkip -= skipped
            input = UnsafeRawBufferPointer(rebasing: input[skipped...])
        }
        if partialHead.isEmpty {
            let consumed = answerRequests(in: input)
            if consumed < input.count { keepPartial(UnsafeRawBufferPointer(rebasing: input[consumed...])) }
        } else {
            partialHead.append(contentsOf: input)
            let consumed = partialHead.withUnsafeBytes { answerRequests(in: $0) }
            let leftover = Array(partialHead[consumed...])
            partialHead.removeAll(keepingCapacity: true)
            leftover.withUnsafeBytes { keepPartial($0) }
        }
        if !isFinished, !connection.isWritable {
            // A client pipelining faster than it reads waits until it has read what we sent.
            connection.pauseReading()
            connection.whenWritable().onValue { [connection] in connection.resumeReading() }
        }
    }

    private func keepPartial(_ bytes: UnsafeRawBufferPointer) {
        guard !isFinished, !bytes.isEmpty else { return }
        guard partialHead.count + bytes.count <= Self.maximumHeadSize else {
            isFinished = true
            connection.close()
            return
        }
        partialHead.append(contentsOf: bytes)
    }

    /// Answers every complete request in `buffer`; returns how many bytes they took.
    private func answerRequests(in buffer: UnsafeRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var offset = 0
        var pendingAnswers = 0
        while offset < buffer.count, !isFinished {
            guard let headEnd = Self.endOfHead(in: buffer, from: offset) else { break }
            let head = RequestHead(UnsafeRawBufferPointer(start: base + offset, count: headEnd - offset))
            offset = headEnd + 4
            if head.contentLength > 0 {
                let available = min(head.contentLength, buffer.count - offset)
                offset += available
                bodyBytesToSkip = head.contentLength - available
            }
            if head.keepsAlive {
                pendingAnswers += 1
                if pendingAnswers == Responses.maximumBatch { flush(&pendingAnswers) }
            } else {
                flush(&pendingAnswers)
                connection.send(Responses.closing)
                finish()
            }
        }
        flush(&pendingAnswers)
        return min(offset, buffer.count)
    }

    /// The offset of the `\r\n\r\n` ending the head that starts at `start`, if it is all there.
    private static func endOfHead(in buffer: UnsafeRawBufferPointer, from start: Int) -> Int? {
        let base = buffer.baseAddress!
        var offset = start
        while offset + 4 <= buffer.count {
            guard let found = memchr(base + offset, Int32(UInt8(ascii: "\r")), buffer.count - offset - 3) else {
                return nil
            }
            let candidate = base.distance(to: UnsafeRawPointer(found))
            if buffer[candidate + 1] == UInt8(ascii: "\n"), buffer[candidate + 2] == UInt8(ascii: "\r"),
               buffer[candidate + 3] == UInt8(ascii: "\n") {
                return candidate
            }
            offset = candidate + 1
        }
        return nil
    }

    private func flush(_ count: inout Int) {
        guard count > 0 else { return }
        connection.send(Responses.keepAlive[count - 1])
        count = 0
    }

    /// Sends what is queued, tells the client we are done, then closes.
    private func finish() {
        guard !isFinished else { return }
        isFinished = true
        connection.pauseReading()
        let connection = connection
        connection.shutdown().always { connection.close() }
    }
}

/// What the server needs from a request head.
struct RequestHead {
    var keepsAlive: Bool
    var contentLength = 0

    /// Reads the head's lines in place: no copy, no allocation.
    init(_ head: UnsafeRawBufferPointer) {
        keepsAlive = true
        var lineStart = head.startIndex
        var isRequestLine = true
        while lineStart < head.endIndex {
            var lineEnd = lineStart
            while lineEnd < head.endIndex, head[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            let line = head[lineStart..<lineEnd]
            if isRequestLine {
                // HTTP/1.1 keeps connections open unless told otherwise; HTTP/1.0 closes them unless told.
                keepsAlive = !Self.contains(line, "HTTP/1.0")
                isRequestLine = false
            } else if let value = Self.value(of: "connection:", in: line) {
                if Self.contains(value, "close") { keepsAlive = false }
                if Self.contains(value, "keep-alive") { keepsAlive = true }
            } else if let value = Self.value(of: "content-length:", in: line) {
                contentLength = value.reduce(0) { length, byte in
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                        ? length * 10 + Int(byte - UInt8(ascii: "0")) : length
                }
            }
            lineStart = lineEnd + 1
        }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }

    /// The rest of `line` after the header name `name` (lowercase, with its colon), matched ignoring case.
    private static func value(
        of name: StaticString, in line: Slice<UnsafeRawBufferPointer>
    ) -> Slice<UnsafeRawBufferPointer>? {
        let count = name.utf8CodeUnitCount
        guard line.count >= count else { return nil }
        let pattern = UnsafeBufferPointer(start: name.utf8Start, count: count)
        var index = line.startIndex
        for expected in pattern {
            guard lowercased(line[index]) == expected else { return nil }
            index += 1
        }
        return line[index...]
    }

    /// Whether `text` (ASCII, lowercase) occurs in `bytes`, ignoring case.
    private static func contains(_ bytes: Slice<UnsafeRawBufferPointer>, _ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        let pattern = UnsafeBufferPointer(start: text.utf8Start, count: count)
        guard bytes.count >= count else { return false }
        var start = bytes.startIndex
        while start + count <= bytes.endIndex {
            var index = 0
            while index < count, lowercased(bytes[start + index]) == lowercased(pattern[index]) { index += 1 }
            if index == count { return true }
            start += 1
        }
        return false
    }
}
