import CLibUV
import Flow

/// What libuv's connect callback reaches: the owner of a `uv_connect_t`, whatever its connection type
/// (a C callback cannot refer to a generic type).
class ConnectRequestOwner: @unchecked Sendable {
    // @unchecked Sendable: no state of its own; see ``ConnectAttempt``.

    /// The callback of every connect request: hands the status to the request's owner.
    static let callback: uv_connect_cb = { request, status in
        Owner.release(request?.pointee.data, as: ConnectRequestOwner.self).finish(status)
    }

    func finish(_ status: Int32) {}
}

/// One connection attempt (`uv_tcp_connect`, `uv_pipe_connect`): the request, the connection it is for
/// and the result. The connection is handed out open, or closed.
final class ConnectAttempt<Connection: StreamConnection>: ConnectRequestOwner, @unchecked Sendable {
    // @unchecked Sendable: `connection` and `request` are used only on the connecting loop (`start`,
    // `cancel` and libuv's callback run there); `connected` is Sendable.
    let connected = PendingResult<Connection>()
    private var connection: Connection?
    private var isFinished = false
    private let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)
    private let didConnect: (Connection) -> Void

    /// - Parameter didConnect: runs on a connection that has just connected, before it is handed out.
    init(didConnect: @escaping (Connection) -> Void = { _ in }) {
        self.didConnect = didConnect
    }

    deinit {
        request.deallocate()
    }

    /// Makes the connection with `make`, then starts connecting it with `connect`, which calls libuv
    /// with the connection, the request and the callback, and returns libuv's status (0 when errors
    /// come back through the callback). Does nothing if cancelled before the loop got to it.
    func start(
        make: () throws(EventLoopError) -> Connection,
        connect: (Connection, UnsafeMutablePointer<uv_connect_t>, uv_connect_cb) -> Int32
    ) {
        guard !connected.isCompleted else { return }
        let connection: Connection
        do {
            connection = try make()
        } catch {
            connected.fail(error)
            return
        }
        self.connection = connection
        request.pointee.data = Owner.retain(self)
        let status = connect(connection, request, Self.callback)
        if status != 0 {
            _ = Owner.release(request.pointee.data, as: ConnectAttempt.self)
            finish(status)
        } else {
            connection.loop.libuvStateDidChange()
        }
    }

    override func finish(_ status: Int32) {
        guard !isFinished, let connection else { return }
        isFinished = true
        if status == 0, connection.closing.isOpen {
            didConnect(connection)
            // `connection` stays referenced: if the future was cancelled before this result came, the
            // result goes nowhere, and `cancel()` (queued on the loop by the cancelling thread) closes it.
            connected.succeed(connection)
        } else {
            self.connection = nil
            connection.beginClosing()
            connected.fail(EventLoop.error(status == 0 ? UV_ECANCELED.rawValue : status))
        }
    }

    /// Closes the socket of an attempt still connecting (libuv then reports `ECANCELED` to `finish`),
    /// or of one that connected after its future was cancelled. Runs only for a future cancelled
    /// before its result came (see ``PendingResult/future(file:line:onCancel:)``), so nobody else
    /// has the connection.
    func cancel() {
        connected.fail(EventLoopError.cancelledByClose)
        connection?.beginClosing()
        connection = nil
    }
}
