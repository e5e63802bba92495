import Flow
import FlowNet
import HTTPParsing

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

    /// The answer to a refused request, before the connection closes.
    static func refusal(_ status: Int, _ reason: String) -> SharedBytes {
        SharedBytes("HTTP/1.1 \(status) \(reason)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    static let requestTimeout = refusal(408, "Request Timeout")
    static let serviceUnavailable = refusal(503, "Service Unavailable")
}

/// One client connection: answers each request the parser finds with the canned response, once the
/// request is complete (its body too), keeps the connection open unless the client asks otherwise, and
/// closes it when the client takes too long. Each request gets one response: `200` once its body is
/// in, or `408` if the deadline comes first.
///
/// Deadlines, both the connection's own: the first request, and each request from its first byte, must
/// arrive (head and body) within ``HTTPSessionSettings/requestTimeout`` (the connection's read
/// deadline, set as a request begins and removed once it is in, so bytes trickling in do not move it);
/// otherwise (between requests, while the client does not read its answers, while the session closes)
/// a connection that reads and writes no byte for ``HTTPSessionSettings/idleTimeout`` is closed by its
/// idle timeout.
final class HTTPSession {
    private let connection: TCPConnection
    private let settings: HTTPSessionSettings
    private var parser: HTTPRequestParser
    /// Set once the session stops reading: the connection is closing.
    private var isFinished = false
    private var isClosed = false
    /// Whether the connection's read deadline is set: the first request, or one under way, must be
    /// in by then.
    private var hasRequestDeadline = false
    /// When a request last completed, or the connection opened: the registry closes the session with
    /// the oldest first when its loop is full.
    private(set) var lastProgress: UInt64 = 0
    /// This session's place in its loop's ``SessionRegistry``; -1 outside it.
    var registryIndex = -1
    private var registry: SessionRegistry?

    init(connection: TCPConnection, settings: HTTPSessionSettings = .fromCommandLine) {
        self.connection = connection
        self.settings = settings
        parser = HTTPRequestParser(limits: settings.limits)
    }

    func start() {
        lastProgress = EventLoop.uptimeNanoseconds
        registry = SessionRegistry.of(connection.loop, settings: settings)
        registry?.admit(self)
        startRequestDeadline()
        // Closed by someone else (its idle timeout, a graceful stop's deadline, the loop shutting
        // down): the session leaves its registry.
        connection.closing.whenClosed { [self] in closeNow() }
        connection.onRead { [self] event in
            switch event {
            case .bytes(let bytes): received(bytes)
            case .endOfStream: finish()
            case .failed(let error):
                // The read deadline passed: a request under way is told so before the connection closes.
                if error == StreamConnection.readDeadlineError, !isFinished, !parser.isBetweenRequests {
                    connection.send(Responses.requestTimeout)
                }
                closeNow()
            }
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard !isFinished else { return }
        let wasBetweenRequests = parser.isBetweenRequests
        var pendingAnswers = 0
        var answered = 0
        do {
            try parser.consume(bytes) { head in
                answered += 1
                if head.keepsAlive {
                    pendingAnswers += 1
                    if pendingAnswers == Responses.maximumBatch { flush(&pendingAnswers) }
                    return true
                }
                flush(&pendingAnswers)
                connection.send(Responses.closing)
                return false
            }
        } catch {
            flush(&pendingAnswers)
            connection.send(Responses.refusal(error.statusCode, error.reasonPhrase))
            finish()
            return
        }
        flush(&pendingAnswers)
        if answered > 0 { lastProgress = EventLoop.uptimeNanoseconds }
        if parser.isFinished {
            finish()
            return
        }
        if parser.isBetweenRequests {
            // Between requests only the idle timeout applies.
            removeRequestDeadline()
        } else if wasBetweenRequests || answered > 0 {
            // A new request started in this chunk: its deadline counts from now, and does not move
            // while it trickles in.
            startRequestDeadline()
        }
        if !connection.isWritable {
            // A client pipelining faster than it reads waits until it has read what we sent; while it
            // does, only the idle timeout applies, and a request under way gets a new deadline after.
            connection.pauseReading()
            removeRequestDeadline()
            let session = LoopBound(self, loop: connection.loop)
            connection.whenWritable().onValue(on: connection.loop.scheduler) { session.value.resumeReading() }
        }
    }

    private func resumeReading() {
        guard !isFinished else { return }
        if !parser.isBetweenRequests { startRequestDeadline() }
        connection.resumeReading()
    }

    // MARK: Deadlines

    /// Gives the request now under way ``HTTPSessionSettings/requestTimeout`` from now, as the
    /// connection's read deadline; meanwhile the idle timeout does not apply (a request may pause for
    /// longer than it, within its deadline).
    private func startRequestDeadline() {
        if !hasRequestDeadline { connection.idleTimeout = nil }
        hasRequestDeadline = true
        connection.setReadDeadline(in: settings.requestTimeout)
    }

    /// No request is under way: the connection's idle timeout applies again.
    private func removeRequestDeadline() {
        guard hasRequestDeadline else { return }
        hasRequestDeadline = false
        connection.setReadDeadline(in: nil)
        connection.idleTimeout = settings.idleTimeout
    }

    private func flush(_ count: inout Int) {
        guard count > 0 else { return }
        connection.send(Responses.keepAlive[count - 1])
        count = 0
    }

    // MARK: Closing

    /// Sends what is queued, tells the client we are done, then closes; a client that does not take
    /// what is queued is closed by the connection's idle timeout.
    private func finish() {
        guard !isFinished else { return }
        isFinished = true
        connection.pauseReading()
        removeRequestDeadline()
        let session = LoopBound(self, loop: connection.loop)
        connection.shutdown().always(on: connection.loop.scheduler) { session.value.closeNow() }
    }

    /// Closes the connection to make room for a new one (see ``SessionRegistry``).
    func evict() {
        if !isFinished, !parser.isBetweenRequests { connection.send(Responses.serviceUnavailable) }
        closeNow()
    }

    private func closeNow() {
        guard !isClosed else { return }
        isFinished = true
        isClosed = true
        registry?.remove(self)
        registry = nil
        connection.close()
    }
}
