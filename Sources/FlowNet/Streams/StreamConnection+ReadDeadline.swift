import CLibUV
import Flow

/// A connection's read deadline: when reading ends, and the loop timer that checks. The timer is not
/// moved when the deadline moves later or is removed: when it fires early it is armed again for the
/// deadline then set, or not at all.
struct ReadDeadlineState {
    /// When reading ends, on the timeouts' clock; nil while no deadline is set.
    var deadline: UInt64?
    var timer: Disposable?
    /// When the armed ``timer`` fires.
    var timerFiresAt: UInt64 = 0
    /// Whether the deadline has passed: reading has ended.
    var hasPassed = false

    mutating func disposeTimer() {
        timer?.dispose()
        timer = nil
    }
}

extension StreamConnection {
    /// Ends reading `seconds` from now, however many bytes arrive meanwhile, unless the deadline is
    /// moved (called again) or removed (`nil`) first: a deadline for a whole request, as Go's
    /// `SetReadDeadline` or an HTTP server's request timeout, where ``idleTimeout`` would let a client
    /// that trickles bytes keep the connection for ever. Timed on ``timeoutScheduler``'s clock (the
    /// loop's by default). Callable from any thread.
    ///
    /// At the deadline the connection stops reading and stays open for writing, so that the server can
    /// answer before it closes: the read handler is told `.failed` with `ETIMEDOUT`, and waiting and
    /// later reads, and the connection's sequences, fail with it. Reading does not start again.
    ///
    /// ```swift
    /// connection.setReadDeadline(in: 10)   // the request, head and body, must be in within 10 s
    /// connection.onRead { event in
    ///     switch event {
    ///     case .bytes(let bytes): parse(bytes)   // and, once the request is in: setReadDeadline(in: nil)
    ///     case .failed(let error) where error == StreamConnection.readDeadlineError:
    ///         connection.write("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n")
    ///         connection.close()
    ///     case .endOfStream, .failed: connection.close()
    ///     }
    /// }
    /// ```
    ///
    /// A number of seconds that is negative or not finite stops the program with a message.
    public func setReadDeadline(in seconds: Double?) {
        if let seconds { Self.validateTimeout(seconds, "setReadDeadline(in:)") }
        loop.performAndWait("\(type(of: self)).setReadDeadline(in:)") {
            guard closing.isOpen, !hasReachedEnd else { return }
            guard let seconds else {
                readDeadlineState.deadline = nil
                return
            }
            let deadline = timeoutClockReading + UInt64(seconds * 1e9)
            readDeadlineState.deadline = deadline
            if readDeadlineState.timer != nil, readDeadlineState.timerFiresAt <= deadline { return }
            // No timer, or one armed for later than the new deadline.
            armReadDeadlineTimer(at: deadline)
        }
    }

    /// What reads fail with once the read deadline has passed: `ETIMEDOUT`.
    public static var readDeadlineError: EventLoopError { EventLoop.error(UV_ETIMEDOUT.rawValue) }

    /// Arms the read deadline's timer again for the deadline set, on the clock now in use: the
    /// ``timeoutScheduler`` changed. Loop context only.
    func restartReadDeadline() {
        readDeadlineState.disposeTimer()
        guard let deadline = readDeadlineState.deadline else { return }
        armReadDeadlineTimer(at: deadline)
    }

    private func armReadDeadlineTimer(at deadline: UInt64) {
        readDeadlineState.disposeTimer()
        readDeadlineState.timerFiresAt = deadline
        // The connection stays alive until it closes, and closing disposes the timer.
        readDeadlineState.timer = scheduleTimeout(at: deadline) { [self] in readDeadlineTimerFired() }
    }

    private func readDeadlineTimerFired() {
        readDeadlineState.timer = nil
        guard let deadline = readDeadlineState.deadline, closing.isOpen, !hasReachedEnd else { return }
        guard timeoutClockReading >= deadline else {
            armReadDeadlineTimer(at: deadline)
            return
        }
        readDeadlineState.deadline = nil
        endReadingAtDeadline()
    }
}
