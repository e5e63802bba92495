import CLibUV
import Flow

extension TCPConnection {
    /// Connects to `address` from `loop`. The future fails with libuv's error, for instance
    /// `ECONNREFUSED: connection refused`; cancelling it while it connects closes the socket.
    /// Callable from any thread.
    ///
    /// ```swift
    /// let address = try SocketAddress(host: "::1", port: 7000)
    /// TCPConnection.connect(to: address, on: loop).onValue { connection in connection.write("hi") }
    /// ```
    public static func connect(to address: SocketAddress, on loop: EventLoop = .main) -> Future<TCPConnection> {
        let attempt = ConnectAttempt()
        let run: @Sendable () -> Void = { attempt.start(address, on: loop) }
        if loop.isInLoopContext { run() } else { loop.execute(run) }
        return attempt.connected.future(onCancel: {
            if loop.isInLoopContext { attempt.cancel() } else { loop.execute { attempt.cancel() } }
        })
    }

    /// Connects to the numeric `host` (`127.0.0.1`, `::1`) and `port`; see ``connect(to:on:)``.
    ///
    /// ```swift
    /// TCPConnection.connect(host: "127.0.0.1", port: 7000, on: loop)
    ///     .onError { error in print(error) }   // ECONNREFUSED: connection refused
    /// ```
    public static func connect(host: String, port: Int, on loop: EventLoop = .main) -> Future<TCPConnection> {
        do {
            return connect(to: try SocketAddress(host: host, port: port), on: loop)
        } catch {
            return Future(error: error)
        }
    }
}

/// One connection attempt: the `uv_connect_t`, the connection it is for and the result.
final class ConnectAttempt: @unchecked Sendable {
    // @unchecked Sendable: `connection` and `request` are used only on the connecting loop (`start` and
    // `cancel` are run there); `connected` is Sendable.
    let connected = PendingResult<TCPConnection>()
    private var connection: TCPConnection?
    private let request = UnsafeMutablePointer<uv_connect_t>.allocate(capacity: 1)

    func start(_ address: SocketAddress, on loop: EventLoop) {
        guard !connected.isCompleted else { return }   // cancelled before the loop got to it
        let connection: TCPConnection
        do {
            connection = try TCPConnection(loop: loop, readBuffer: ReadBuffer())
        } catch {
            connected.fail(error)
            return
        }
        self.connection = connection
        request.pointee.data = Owner.retain(self)
        let status = address.withSockaddr { sockaddr in
            uv_tcp_connect(request, connection.handle, sockaddr) { request, status in
                let attempt = Owner.release(request?.pointee.data, as: ConnectAttempt.self)
                attempt.finish(status)
            }
        }
        if status != 0 {
            _ = Owner.release(request.pointee.data, as: ConnectAttempt.self)
            finish(status)
        } else {
            loop.libuvStateDidChange()
        }
    }

    private func finish(_ status: Int32) {
        guard let connection else { return }
        self.connection = nil
        if status == 0, connection.lifecycle == .open {
            connection.setNoDelay(true)
            connected.succeed(connection)
        } else {
            connection.beginClosing()
            connected.fail(EventLoop.error(status == 0 ? UV_ECANCELED.rawValue : status))
        }
    }

    /// Closes the socket of an attempt still connecting; libuv then reports `ECANCELED` to `finish`.
    func cancel() {
        connected.fail(EventLoopError.cancelledByClose)
        connection?.beginClosing()
    }

    deinit {
        request.deallocate()
    }
}
