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
        let attempt = ConnectAttempt<TCPConnection>(didConnect: { connection in
            connection.setNoDelay(true)
            connection.nameResource("TCP connection to \(address)")
        })
        let run: @Sendable () -> Void = {
            let make = { () throws(EventLoopError) in try TCPConnection(loop: loop, readBuffer: ReadBuffer()) }
            attempt.start(make: make) { connection, request, callback in
                address.withSockaddr { uv_tcp_connect(request, connection.tcpHandle, $0, callback) }
            }
        }
        loop.inContext("TCPConnection.connect", run)
        return attempt.connected.future(onCancel: {
            if loop.isInLoopContext { attempt.cancel() } else { loop.execute { attempt.cancel() } }
        })
    }

    /// Connects to `host`, a name (`localhost`, `example.com`) or a numeric address, and `port`.
    ///
    /// A name is resolved with ``NameResolver`` and its addresses are tried in turn, in the resolver's
    /// order (IPv6 first where usable): an attempt that fails, or has not connected after
    /// `attemptTimeout` seconds, gives way to the next address. The future fails with the last
    /// attempt's error (`ECONNREFUSED: connection refused`, `ETIMEDOUT: connection timed out`), or with
    /// the resolver's (`EAI_NONAME: unknown node or service`). Callable from any thread.
    ///
    /// ```swift
    /// TCPConnection.connect(host: "localhost", port: 7000, on: loop)
    ///     .onValue { connection in print("connected to \(connection.remoteAddress!)") }
    ///     .onError { error in print(error) }   // ECONNREFUSED: connection refused
    /// ```
    public static func connect(
        host: String, port: Int, attemptTimeout: Double = 5, on loop: EventLoop = .main
    ) -> Future<TCPConnection> {
        if let address = try? SocketAddress(host: host, port: port) {
            return connect(to: address, on: loop)
        }
        return NameResolver.resolve(host: host, port: port, on: loop)
            .flatMap(on: .none) { addresses in
                connect(toFirstOf: addresses, attemptTimeout: attemptTimeout, on: loop)
            }
    }

    /// Connects to the first of `addresses` that accepts, trying them in order; an attempt that fails or
    /// has not connected after `attemptTimeout` seconds gives way to the next one. Fails with the last
    /// attempt's error. Callable from any thread.
    ///
    /// ```swift
    /// NameResolver.resolve(host: "localhost", port: 7000, on: loop)
    ///     .flatMap { TCPConnection.connect(toFirstOf: $0, attemptTimeout: 1, on: loop) }
    /// ```
    public static func connect(
        toFirstOf addresses: [SocketAddress], attemptTimeout: Double = 5, on loop: EventLoop = .main
    ) -> Future<TCPConnection> {
        guard let first = addresses.first else { return Future(error: EventLoop.error(UV_EINVAL.rawValue)) }
        let rest = Array(addresses.dropFirst())
        let attempt = connect(to: first, attemptTimeout: attemptTimeout, on: loop)
        guard !rest.isEmpty else { return attempt }
        return attempt.flatMapError(on: .none) { _ in
            connect(toFirstOf: rest, attemptTimeout: attemptTimeout, on: loop)
        }
    }

    /// One attempt that gives up with `ETIMEDOUT` after `attemptTimeout` seconds, closing its socket.
    private static func connect(
        to address: SocketAddress, attemptTimeout: Double, on loop: EventLoop
    ) -> Future<TCPConnection> {
        Future(on: .none) { completion in
            let observed = connect(to: address, on: loop).onResult(on: .none) { completion($0) }
            let timer = loop.execute(after: attemptTimeout) {
                completion(.failure(EventLoop.error(UV_ETIMEDOUT.rawValue)))
            }
            return Disposer {
                timer.dispose()
                observed.cancelQuietly()
            }
        }
    }
}
