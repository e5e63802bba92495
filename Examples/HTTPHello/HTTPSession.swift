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
/// Deadlines: the first request, and each request from its first byte, must arrive (head and body)
/// within ``HTTPSessionSettings/requestTimeout``; between requests, and while the client does not read
/// its answers, the connection may idle for ``HTTPSessionSettings/idleTimeout``. One loop timer per
/// connection enforces them: reading a chunk only moves the deadline, and the timer, when it fires
/// early, is armed again for the new deadline. A deadline that moves earlier (a request beginning
/// while the connection waits out its idle timeout) re-arms the timer at once.
final class HTTPSession {
    private let connection: TCPConnection
    private let settings: HTTPSessionSettings
    private var parser: HTTPRequestParser
    /// Set once the session stops reading: the connection is closing.
    private var isFinished = false
    private var isClosed = false
    /// When the connection is closed, in ``EventLoop/uptimeNanoseconds``, unless something moves it.
    private var deadline: UInt64 = 0
    private var deadlineTimer: Disposable?
    /// When the armed ``deadlineTimer`` fires.
    private var timerFiresAt: UInt64 = 0
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
        moveDeadline(by: settings.requestTimeout)
        // Closed by someone else (a graceful stop's deadline, the loop shutting down): the deadline
        // timer must go too, or it would keep the loop running until it fires.
        connection.closing.whenClosed { [self] in closeNow() }
        connection.onRead { [self] event in
            switch event {
            case .bytes(let bytes): received(bytes)
            case .endOfStream: finish()
            case .failed: closeNow()
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
            moveDeadline(by: settings.idleTimeout)
        } else if wasBetweenRequests || answered > 0 {
            // A new request started in this chunk: its deadline counts from now, and does not move
            // while it trickles in.
            moveDeadline(by: settings.requestTimeout)
        }
        if !connection.isWritable {
            // A client pipelining faster than it reads waits until it has read what we sent.
            connection.pauseReading()
            moveDeadline(by: settings.idleTimeout)
            connection.whenWritable().onValue { [connection] in connection.resumeReading() }
        }
    }

    private func flush(_ count: inout Int) {
        guard count > 0 else { return }
        connection.send(Responses.keepAlive[count - 1])
        count = 0
    }

    // MARK: Deadlines

    private func moveDeadline(by seconds: Double) {
        deadline = EventLoop.uptimeNanoseconds + UInt64(seconds * 1e9)
        if let timer = deadlineTimer, deadline < timerFiresAt {
            // The deadline moved earlier: a request began on a connection waiting out its idle
            // timeout, and the timer armed for that would give the request until then.
            timer.dispose()
            deadlineTimer = nil
        }
        if deadlineTimer == nil { armDeadlineTimer() }
    }

    private func armDeadlineTimer() {
        // The timer fires on the connection's loop, where this session lives.
        let session = LoopBound(self, loop: connection.loop)
        timerFiresAt = deadline
        deadlineTimer = connection.loop.execute(atUptimeNanoseconds: deadline) { session.value.deadlineReached() }
    }

    private func deadlineReached() {
        deadlineTimer = nil
        guard !isClosed else { return }
        if EventLoop.uptimeNanoseconds < deadline {
            armDeadlineTimer()
            return
        }
        if !isFinished, !parser.isBetweenRequests { connection.send(Responses.requestTimeout) }
        closeNow()
    }

    // MARK: Closing

    /// Sends what is queued, tells the client we are done, then closes; a client that does not take
    /// what is queued within the idle timeout is closed anyway.
    private func finish() {
        guard !isFinished else { return }
        isFinished = true
        connection.pauseReading()
        moveDeadline(by: settings.idleTimeout)
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
        deadlineTimer?.dispose()
        deadlineTimer = nil
        connection.close()
    }
}
