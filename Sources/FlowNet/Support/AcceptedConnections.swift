import Flow

/// The connections a listener accepted and that are not yet closed: their count as a signal, and the
/// graceful close that ``TCPListener`` and ``PipeListener`` share. Loop context only, but for
/// ``count``, whose signal may be read anywhere.
final class AcceptedConnections: @unchecked Sendable {
    // @unchecked Sendable: `open` and `drained` are used only in the listener's loop context; `count`
    // is a signal, safe from any thread.
    let loop: EventLoop
    let count = ReadWriteSignal(0)
    private var open: [ObjectIdentifier: StreamConnection] = [:]
    /// Told when the last open connection has closed, during a graceful close.
    private var drained: [() -> Void] = []

    init(loop: EventLoop) { self.loop = loop }

    /// Counts `connection` until it closes.
    func track(_ connection: StreamConnection) {
        let id = ObjectIdentifier(connection)
        open[id] = connection
        count.value = open.count
        connection.closing.whenClosed { [self] in
            open[id] = nil
            count.value = open.count
            guard open.isEmpty else { return }
            let waiting = drained
            drained = []
            for done in waiting { done() }
        }
    }

    /// Stops accepting with `stopListening`, waits for the open connections to close for up to
    /// `deadline` seconds (for ever if infinite), then closes those left; the future gives how many
    /// were closed that way, once the listener and every connection are closed. Callable from any
    /// thread. Calls made while one is under way (or after it) share its outcome; the earliest deadline
    /// holds. Should the loop close first, it closes the connections left, which count as closed at
    /// the deadline. A deadline that is NaN or negative stops the program with a message.
    func closeGracefully(
        deadline: Double, caller: String, stopListening: @escaping @Sendable () -> Future<Void>
    ) -> Future<Int> {
        misusePrecondition(
            deadline >= 0,
            "\(caller)(deadline:): the deadline must be 0 or more seconds (.infinity waits for every connection to close), not \(deadline)")
        let result = PendingResult<Int>()
        loop.performOrQueue(caller) { [self] in
            if let gracefulOutcome {
                result.succeed(gracefulOutcome)
                return
            }
            if let gracefulClose {
                gracefulClose.join(result, deadline: deadline)
                return
            }
            let gracefulClose = GracefulClose(connections: self, listenerClosed: stopListening())
            self.gracefulClose = gracefulClose
            gracefulClose.join(result, deadline: deadline)
            if open.isEmpty {
                gracefulClose.drained()
            } else {
                drained.append { gracefulClose.drained() }
            }
        }
        return result.future()
    }

    /// The graceful close under way, shared by every call.
    fileprivate var gracefulClose: GracefulClose?
    /// How many connections the graceful close closed at its deadline, once it is done.
    fileprivate var gracefulOutcome: Int?

    /// Closes the connections still open, for a graceful close whose deadline came (or whose loop is
    /// closing); returns how many it closed.
    fileprivate func closeTheRest() -> Int {
        let left = open.values.filter { $0.closing.isOpen }
        for connection in left { connection.close() }
        return left.count
    }
}

/// One graceful close of a listener: its deadline, the connections it forced, and the callers waiting
/// for the outcome. Loop context only.
private final class GracefulClose: @unchecked Sendable {
    // @unchecked Sendable: used only in the listener's loop context (the deadline's and the loop's
    // close callbacks run there).
    /// Holds this object until the close is done (`drained()` breaks the cycle).
    private let connections: AcceptedConnections
    private let listenerClosed: Future<Void>
    private var waiting: [PendingResult<Int>] = []
    /// How many connections the deadline (or the loop's closing) closed; set once it came.
    private var forced: Int?
    private var deadline = UInt64.max
    private var deadlineTimer: Disposable?
    private var loopClosingObserver: Int?

    init(connections: AcceptedConnections, listenerClosed: Future<Void>) {
        self.connections = connections
        self.listenerClosed = listenerClosed
        let loop = connections.loop
        // A loop closed during the grace period cancels its timers: the connections left are
        // closed then, before the loop closes its handles, so that the outcome is still reported.
        loopClosingObserver = loop.whenClosing { [self] in forceTheRest() }
    }

    /// Adds a caller waiting for the outcome, whose deadline is `seconds` from now.
    func join(_ result: PendingResult<Int>, deadline seconds: Double) {
        waiting.append(result)
        guard forced == nil, seconds.isFinite else { return }
        let loop = connections.loop
        // Capped far beyond any real deadline, within what a deadline in nanoseconds can hold.
        let newDeadline = EventLoop.uptimeNanoseconds + UInt64(min(seconds, 1e9) * 1e9)
        guard newDeadline < deadline else { return }
        deadline = newDeadline
        deadlineTimer?.dispose()
        deadlineTimer = loop.execute(atUptimeNanoseconds: newDeadline) { [self] in forceTheRest() }
    }

    /// The deadline came, or the loop is closing: the connections left are closed.
    private func forceTheRest() {
        guard forced == nil else { return }
        forced = connections.closeTheRest()
    }

    /// Every connection is closed: the outcome goes to every caller once the listener is closed too.
    func drained() {
        deadlineTimer?.dispose()
        deadlineTimer = nil
        if let loopClosingObserver {
            connections.loop.forgetClosingObserver(loopClosingObserver)
            self.loopClosingObserver = nil
        }
        let count = forced ?? 0
        forced = count
        listenerClosed.onResult(on: .none) { [self] _ in
            connections.gracefulOutcome = count
            connections.gracefulClose = nil
            let callers = waiting
            waiting = []
            for caller in callers { caller.succeed(count) }
        }
    }
}
