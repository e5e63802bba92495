import HTTPParsing
import Testing

/// Parses `text` fed in chunks of `chunkSize` bytes (the whole text at once by default), collecting the
/// heads handed on and the error, if any.
private func parse(
    _ text: String, limits: HTTPRequestLimits = HTTPRequestLimits(), chunkSize: Int? = nil
) -> (heads: [HTTPRequestHead], error: HTTPRequestError?, parser: HTTPRequestParser) {
    var parser = HTTPRequestParser(limits: limits)
    var heads: [HTTPRequestHead] = []
    let bytes = Array(text.utf8)
    let size = chunkSize ?? max(1, bytes.count)
    var offset = 0
    while offset < bytes.count {
        let end = min(bytes.count, offset + size)
        let error = parser.consume(bytes[offset..<end]) { head in
            heads.append(head)
            return head.keepsAlive
        }
        if let error { return (heads, error, parser) }
        offset = end
    }
    return (heads, nil, parser)
}

extension HTTPRequestParser {
    /// Consumes `bytes`, returning the error instead of throwing it.
    mutating func consume(_ bytes: ArraySlice<UInt8>, onRequest: (HTTPRequestHead) -> Bool) -> HTTPRequestError? {
        bytes.withUnsafeBytes { chunk in
            do throws(HTTPRequestError) {
                try consume(chunk, onRequest: onRequest)
                return nil
            } catch {
                return error
            }
        }
    }
}

private let get = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"

@Suite("HTTP request parsing (HTTPHello)")
struct HTTPParsingTests {
    @Test("a Content-Length past Int.max is refused with 413 instead of overflowing")
    func overflowingContentLengthIs413() {
        for length in ["9223372036854775808", "18446744073709551616", String(repeating: "9", count: 400)] {
            let result = parse("POST / HTTP/1.1\r\nContent-Length: \(length)\r\n\r\n")
            #expect(result.error == .bodyTooLarge, "Content-Length: \(length)")
            #expect(result.error?.statusCode == 413)
            #expect(result.parser.isFinished)
        }
    }

    @Test("a Content-Length at the limit is accepted and its body skipped; one byte more is 413")
    func contentLengthLimit() {
        let limits = HTTPRequestLimits(maximumBodySize: 10)
        let request = "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789"
        let accepted = parse(request + get, limits: limits, chunkSize: 3)
        #expect(accepted.error == nil)
        #expect(accepted.heads == [
            HTTPRequestHead(keepsAlive: true, contentLength: 10), HTTPRequestHead(keepsAlive: true),
        ])
        #expect(accepted.parser.isBetweenRequests)
        #expect(parse("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", limits: limits).error == .bodyTooLarge)
    }

    @Test("a head over the size limit is refused with 431, whole or arriving a byte at a time")
    func oversizedHeadIs431() {
        let limits = HTTPRequestLimits(maximumHeadSize: 64)
        let long = "GET /" + String(repeating: "a", count: 100) + " HTTP/1.1\r\n\r\n"
        #expect(parse(long, limits: limits).error == .headTooLarge)
        #expect(parse(long, limits: limits, chunkSize: 1).error == .headTooLarge)
        // Never completed: refused once the bytes held pass the limit, without waiting for the end.
        let unfinished = parse(String(long.prefix(70)), limits: limits, chunkSize: 7)
        #expect(unfinished.error == .headTooLarge)
        #expect(parse(get, limits: HTTPRequestLimits(maximumHeadSize: get.utf8.count)).error == nil)
        #expect(parse(get, limits: HTTPRequestLimits(maximumHeadSize: get.utf8.count - 1)).error == .headTooLarge)
    }

    @Test("a request line of 1 MB is refused with 431 with the default limits")
    func megabyteRequestLineIs431() {
        let line = "GET /" + String(repeating: "x", count: 1 << 20) + " HTTP/1.1\r\n\r\n"
        let result = parse(line, chunkSize: 65536)
        #expect(result.error == .headTooLarge)
        #expect(result.error?.statusCode == 431)
    }

    @Test("more header lines than the limit are refused with 431")
    func tooManyHeaderLinesIs431() {
        let limits = HTTPRequestLimits(maximumHeaderCount: 3)
        let head = { (count: Int) in "GET / HTTP/1.1\r\n" + (0..<count).map { "X-\($0): y\r\n" }.joined() + "\r\n" }
        #expect(parse(head(3), limits: limits).error == nil)
        #expect(parse(head(4), limits: limits).error == .headTooLarge)
    }

    @Test(
        "a head that is not HTTP/1.x is refused with 400",
        arguments: [
            "\r\n\r\n", "GET /\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1 \r\n\r\n",
            "GET / HTTP/1.1\r\nHost : a\r\n\r\n", "GET / HTTP/1.1\r\n: a\r\n\r\n", "GET / HTTP/1.1\r\nNoColon\r\n\r\n",
            "GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n", "POST / HTTP/1.1\r\nContent-Length: 0x10\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            "\u{0}\u{1}random\u{7f}bytes\r\n\r\n",
        ])
    func malformedHeadIs400(_ text: String) {
        let result = parse(text)
        #expect(result.error == .malformed)
        #expect(result.error?.statusCode == 400)
        #expect(result.heads.isEmpty)
    }

    @Test("a Transfer-Encoding is refused with 501: only Content-Length bodies are read")
    func transferEncodingIs501() {
        #expect(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").error == .unsupportedTransferEncoding)
    }

    @Test("100 pipelined requests give 100 heads, however the stream is cut")
    func pipelinedRequests() {
        let stream = String(repeating: get, count: 100)
        for chunkSize in [nil, 1, 5, 37, 1000] {
            let result = parse(stream, chunkSize: chunkSize)
            #expect(result.error == nil)
            #expect(result.heads.count == 100, "chunks of \(chunkSize.map(String.init) ?? "all")")
            #expect(result.parser.isBetweenRequests)
        }
    }

    @Test("keep-alive: HTTP/1.1 unless Connection: close, HTTP/1.0 only with keep-alive; close stops reading")
    func keepAlive() {
        #expect(parse(get).heads == [HTTPRequestHead(keepsAlive: true)])
        #expect(parse("GET / HTTP/1.0\r\n\r\n").heads == [HTTPRequestHead(keepsAlive: false)])
        #expect(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").heads == [HTTPRequestHead(keepsAlive: true)])
        let closing = parse("GET / HTTP/1.1\r\nconnection: close\r\n\r\n" + get)
        #expect(closing.heads == [HTTPRequestHead(keepsAlive: false)])
        #expect(closing.parser.isFinished)
    }

    @Test("a partial head leaves the parser inside a request; completing it returns it between requests")
    func partialHead() {
        var parser = HTTPRequestParser()
        var count = 0
        let bytes = Array(get.utf8)
        #expect(parser.consume(bytes[..<10]) { _ in count += 1; return true } == nil)
        #expect(!parser.isBetweenRequests)
        #expect(count == 0)
        #expect(parser.consume(bytes[10...]) { _ in count += 1; return true } == nil)
        #expect(parser.isBetweenRequests)
        #expect(count == 1)
    }
}

@Suite("HTTP request parsing: a request with a body")
struct HTTPParsingBodyTests {
    @Test("a request is handed on once the last byte of its body has arrived, not at its head")
    func requestWithBodyIsHandedOnWhenComplete() {
        var parser = HTTPRequestParser()
        var heads: [HTTPRequestHead] = []
        let stream = Array(("POST / HTTP/1.1\r\nContent-Length: 6\r\n\r\nabc").utf8)
        #expect(parser.consume(stream[...]) { heads.append($0); return true } == nil)
        #expect(heads.isEmpty, "handed on before its body arrived")
        #expect(!parser.isBetweenRequests)
        #expect(parser.consume(Array("de".utf8)[...]) { heads.append($0); return true } == nil)
        #expect(heads.isEmpty)
        // The body's last byte and a pipelined request in the same chunk: both, in order.
        #expect(parser.consume(Array(("f" + get).utf8)[...]) { heads.append($0); return true } == nil)
        #expect(heads == [HTTPRequestHead(keepsAlive: true, contentLength: 6), HTTPRequestHead(keepsAlive: true)])
        #expect(parser.isBetweenRequests)
    }

    @Test("a closing request with a body stops the parser when its body ends, whatever follows")
    func closingRequestWithBody() {
        let result = parse("POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: 4\r\n\r\nbody" + get, chunkSize: 3)
        #expect(result.heads == [HTTPRequestHead(keepsAlive: false, contentLength: 4)])
        #expect(result.parser.isFinished)
    }
}
