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
    /// `deadline` seconds, then closes those left; the future gives how many were closed that way,
    /// once the listener and every connection are closed. Callable from any thread.
    func closeGracefully(
        deadline: Double, caller: String, stopListening: @escaping @Sendable () -> Future<Void>
    ) -> Future<Int> {
        let result = PendingResult<Int>()
        loop.performOrQueue(caller) { [self] in
            let listenerClosed = stopListening()
            guard !open.isEmpty else {
                listenerClosed.onResult(on: .none) { _ in result.succeed(0) }
                return
            }
            let forced = Locked(0)
            let timer = loop.execute(after: max(0, deadline)) { [self] in
                let left = Array(open.values)
                forced.withLock { $0 = left.count }
                for connection in left { connection.close() }
            }
            drained.append {
                timer.dispose()
                listenerClosed.onResult(on: .none) { _ in result.succeed(forced.withLock { $0 }) }
            }
        }
        return result.future()
    }
}
