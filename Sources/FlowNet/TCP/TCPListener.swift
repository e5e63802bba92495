import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// A listening TCP socket on an `EventLoop`: hands each accepted connection to a handler.
///
/// ```swift
/// let listener = try TCPListener.listen(host: "127.0.0.1", port: 0, on: .main) { connection in
///     connection.onRead { event in
///         if case .bytes(let bytes) = event { connection.send(copying: bytes) } else { connection.close() }
///     }
/// }
/// print("listening on \(listener.localAddress)")   // 127.0.0.1:<a free port>
/// try EventLoop.main.run()
/// ```
///
/// The listener stays open until ``close()``; the loop's `EventLoop.run()` returns once it and every
/// connection are closed. Accepted connections have Nagle's algorithm turned off.
///
/// Close listeners and connections before `EventLoop.close()`: that call closes leftover libuv handles
/// without telling their owners, whose memory then stays allocated.
public final class TCPListener: Sendable {
    /// The loop accepting connections.
    public let loop: EventLoop
    /// The address listened on; its port is the one chosen when listening on port 0.
    public let localAddress: SocketAddress
    /// The port listened on.
    public var port: Int { localAddress.port }

    /// The listening handle, its accepting and closing, and the connections accepted.
    private let core: StreamListenerCore
    private let connectionDefaults = ConnectionDefaults()

    /// The ``StreamConnection/idleTimeout`` each connection accepted from now on starts with: seconds it
    /// may go without reading or writing a byte before it is closed; `nil` (the default) sets none. A
    /// connection's own setting changes it for that connection. Callable from any thread.
    ///
    /// ```swift
    /// listener.connectionIdleTimeout = 30
    /// ```
    public var connectionIdleTimeout: Double? {
        get { connectionDefaults.connectionIdleTimeout }
        set { connectionDefaults.connectionIdleTimeout = newValue }
    }

    /// The ``StreamConnection/timeoutScheduler`` each connection accepted from now on starts with: the
    /// scheduler whose clock times its idle timeout and read deadline; `nil` (the default) for the
    /// connection's loop. Tests give a FlowTesting `VirtualTimeScheduler`'s scheduler, to move the
    /// connections' time by hand. Callable from any thread.
    public var connectionTimeoutScheduler: Scheduler? {
        get { connectionDefaults.connectionTimeoutScheduler }
        set { connectionDefaults.connectionTimeoutScheduler = newValue }
    }
    /// How many times accepting an incoming connection failed, as libuv reports it (running out of
    /// file descriptors, above all). Callable from any thread (read on the loop).
    ///
    /// A lower bound on the connections lost: libuv skips connections their peer aborted before they
    /// were accepted without reporting them, and when the process runs out of file descriptors it
    /// accepts and at once closes the pending ones with a descriptor it keeps in reserve, usually
    /// without reporting a failure at all.
    public var failedAcceptCount: Int { core.failedAcceptCount(caller: "TCPListener.failedAcceptCount") }

    /// How many accepted connections are open now (accepted, not yet closed), as a signal that tells
    /// of each change. Readable from any thread; changes are signalled on the loop.
    ///
    /// ```swift
    /// bag += listener.openConnections.onValue { count in logger.info("\(count) open connections") }
    /// ```
    public var openConnections: ReadSignal<Int> { core.openConnections }

    /// Listens on `host` and `port`, 0 for any free port. Callable from any thread: off the loop it
    /// opens the socket on the loop and waits for it (see `EventLoop.performAndWait(_:)`); from async
    /// code use ``listenAsync(host:port:backlog:reusePort:on:file:line:onAccept:)-(_,_,_,_,EventLoop,_,_,_)``, which never blocks.
    ///
    /// `host` is a numeric address (`127.0.0.1`, `0.0.0.0` for every IPv4 interface, `::1`, `::` for
    /// every interface, IPv6 and IPv4) or a name such as `localhost`, resolved here, on the calling
    /// thread (from `/etc/hosts` for local names): the listener binds the first of its addresses that
    /// can be bound. Called on the loop's thread, that lookup holds up the loop (a few microseconds
    /// for `/etc/hosts`, as long as DNS takes for others); the `async` form looks names up on libuv's
    /// thread pool.
    ///
    /// ```swift
    /// let listener = try TCPListener.listen(host: "localhost", port: 7000, on: .main) { connection in ... }
    /// ```
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name to listen on.
    ///   - port: the port, 0 for any free one.
    ///   - backlog: how many connections the kernel queues before the loop accepts them.
    ///   - reusePort: sets `SO_REUSEPORT` before binding, so that listeners on several loops share the
    ///     port and the kernel spreads connections between them (see ``TCPListenerGroup``).
    ///   - loop: the loop that accepts, and that the connections run on.
    ///   - file: where the listener is opened, listed by `EventLoop.activeResources()` in debug builds;
    ///     the caller's file by default.
    ///   - line: the line of `file`.
    ///   - onAccept: called on the loop with each new connection; the handler owns it and must close it.
    /// - Throws: libuv's error, such as `EADDRINUSE: address already in use` or, for a name that does
    ///   not resolve, `EAI_NONAME: unknown node or service`.
    public static func listen(
        host: String = "127.0.0.1", port: Int, backlog: Int32 = 511, reusePort: Bool = false,
        on loop: EventLoop = .main, file: StaticString = #fileID, line: UInt = #line,
        onAccept: @escaping (TCPConnection) -> Void
    ) throws(EventLoopError) -> TCPListener {
        loop.assertOpen("TCPListener.listen")
        let addresses = try NameResolver.resolveNow(host: host, port: port, on: loop)
        return try loop.performAndWait("TCPListener.listen") { () throws(EventLoopError) in
            try listen(
                atFirstOf: addresses, backlog: backlog, reusePort: reusePort, on: loop, file: file, line: line,
                onAccept: onAccept)
        }
    }

    /// Listens on `host` and `port` like ``listen(host:port:backlog:reusePort:on:file:line:onAccept:)``, from
    /// async code: a name is looked up on libuv's thread pool, the socket is opened on the loop, and
    /// the task waits for both without blocking a thread.
    ///
    /// ```swift
    /// let listener = try await TCPListener.listenAsync(host: "localhost", port: 0, on: loop) { connection in
    ///     connection.close()
    /// }
    /// ```
    ///
    /// Named apart from the synchronous form: an `async` overload of the same name would be chosen in
    /// every async context, breaking calls written without `await`.
    public nonisolated(nonsending) static func listenAsync(
        host: String = "127.0.0.1", port: Int, backlog: Int32 = 511, reusePort: Bool = false,
        on loop: EventLoop = .main, file: StaticString = #fileID, line: UInt = #line,
        onAccept: @escaping @Sendable (TCPConnection) -> Void
    ) async throws(EventLoopError) -> TCPListener {
        let addresses = try await NameResolver.resolveWithoutBlocking(host: host, port: port, on: loop)
        return try await loop.perform("TCPListener.listenAsync") { () throws(EventLoopError) in
            try listen(
                atFirstOf: addresses, backlog: backlog, reusePort: reusePort, on: loop, file: file, line: line,
                onAccept: onAccept)
        }
    }

    /// Listens on `address` like ``listen(at:backlog:reusePort:on:file:line:onAccept:)``, from async code.
    ///
    /// ```swift
    /// let listener = try await TCPListener.listenAsync(at: SocketAddress(host: "::1", port: 0), on: loop) { _ in }
    /// ```
    public nonisolated(nonsending) static func listenAsync(
        at address: SocketAddress, backlog: Int32 = 511, reusePort: Bool = false,
        on loop: EventLoop = .main, file: StaticString = #fileID, line: UInt = #line,
        onAccept: @escaping @Sendable (TCPConnection) -> Void
    ) async throws(EventLoopError) -> TCPListener {
        try await loop.perform("TCPListener.listenAsync") { () throws(EventLoopError) in
            try listenOnLoop(
                at: address, backlog: backlog, reusePort: reusePort, on: loop, file: file, line: line, onAccept: onAccept)
        }
    }

    /// Listens on the first of `addresses` that can be bound. Loop context only.
    private static func listen(
        atFirstOf addresses: [SocketAddress], backlog: Int32, reusePort: Bool,
        on loop: EventLoop, file: StaticString, line: UInt, onAccept: @escaping (TCPConnection) -> Void
    ) throws(EventLoopError) -> TCPListener {
        var lastError = EventLoop.error(UV_EINVAL.rawValue)
        for address in addresses {
            do {
                return try listenOnLoop(
                    at: address, backlog: backlog, reusePort: reusePort, on: loop, file: file, line: line,
                    onAccept: onAccept)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Listens on `address` (port 0 for any free port). Callable from any thread, as
    /// ``listen(host:port:backlog:reusePort:on:file:line:onAccept:)``.
    ///
    /// ```swift
    /// let listener = try TCPListener.listen(at: SocketAddress(host: "::", port: 0), on: .main) { connection in ... }
    /// ```
    public static func listen(
        at requested: SocketAddress, backlog: Int32 = 511, reusePort: Bool = false,
        on loop: EventLoop = .main, file: StaticString = #fileID, line: UInt = #line,
        onAccept: @escaping (TCPConnection) -> Void
    ) throws(EventLoopError) -> TCPListener {
        try loop.performAndWait("TCPListener.listen") { () throws(EventLoopError) in
            try listenOnLoop(
                at: requested, backlog: backlog, reusePort: reusePort, on: loop, file: file, line: line, onAccept: onAccept)
        }
    }

    private static func listenOnLoop(
        at requested: SocketAddress, backlog: Int32, reusePort: Bool,
        on loop: EventLoop, file: StaticString, line: UInt, onAccept: @escaping (TCPConnection) -> Void
    ) throws(EventLoopError) -> TCPListener {
        BrokenPipeSignal.ignored
        let handle = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        // `uv_tcp_init_ex` creates the socket now, so that options can be set before `bind`.
        let status = uv_tcp_init_ex(loop.unsafeLoopPointer, handle, UInt32(requested.family))
        guard status == 0 else {
            handle.deallocate()
            throw EventLoop.error(status)
        }
        // From here on the handle is registered with libuv: it must be closed, not just freed.
        var failure: Int32 = 0
        if reusePort {
            var fd: uv_os_fd_t = -1
            failure = uv_fileno(handle.asHandle, &fd)
            if failure == 0 {
                var enabled: Int32 = 1
                if setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &enabled, socklen_t(MemoryLayout<Int32>.size)) != 0 {
                    failure = -errno
                }
            }
        }
        if failure == 0 {
            failure = requested.withSockaddr { uv_tcp_bind(handle, $0, 0) }
        }
        var bound: SocketAddress?
        if failure == 0 {
            var storage = sockaddr_storage()
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            failure = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &length) }
            }
            bound = SocketAddress(storage: storage)
        }
        let listener = TCPListener(loop: loop, handle: handle, localAddress: bound ?? requested, onAccept: onAccept)
        try listener.core.listen(backlog: backlog, after: failure)
        loop.nameHandle(handle, kind: .listener, summary: "TCP listener on \(listener.localAddress)", file: file, line: line)
        loop.libuvStateDidChange()
        return listener
    }

    private init(loop: EventLoop, handle: UnsafeMutablePointer<uv_tcp_t>, localAddress: SocketAddress,
                 onAccept: @escaping (TCPConnection) -> Void) {
        self.loop = loop
        self.localAddress = localAddress
        let defaults = connectionDefaults
        core = StreamListenerCore(loop: loop, handle: handle, placeKey: "address", place: "\(localAddress)") { core in
            core.accept(
                making: { () throws(EventLoopError) in try TCPConnection(loop: loop, readBuffer: core.readBuffer) },
                prepare: { connection in
                    connection.setNoDelay(true)
                    let peer = connection.remoteAddress.map { "\($0)" } ?? "an unknown peer"
                    connection.nameResource("TCP connection from \(peer) (accepted on \(localAddress))")
                    defaults.prepare(connection)
                },
                onAccept: onAccept)
        }
    }

    /// Stops listening. Connections already accepted stay open. The future completes once libuv has
    /// closed the socket. Callable from any thread.
    ///
    /// ```swift
    /// listener.close().onValue { print("no longer listening") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        core.close(caller: "TCPListener.close")
    }

    /// Stops accepting, lets the open connections finish for up to `deadline` seconds from now, then
    /// closes those still open. The future completes once the listener and every connection it
    /// accepted are closed, with how many connections the deadline closed (0 when all finished in
    /// time). Callable from any thread, and more than once: every call shares the first one's
    /// outcome, with the earliest deadline. If the loop is shut down during the grace period, the
    /// connections left are closed then and counted as closed at the deadline.
    ///
    /// ```swift
    /// listener.closeGracefully(deadline: 5).onValue { forced in print("stopped; \(forced) closed at the deadline") }
    /// ```
    ///
    /// - Parameter deadline: seconds from now to wait for the connections, 0 or more; `.infinity` waits
    ///   for every connection to close. NaN or a negative deadline stops the program with a message.
    @discardableResult
    public func closeGracefully(deadline: Double) -> Future<Int> {
        core.closeGracefully(deadline: deadline, caller: "TCPListener.closeGracefully") { [self] in close() }
    }
}

extension TCPListener: CustomStringConvertible {
    /// `TCPListener(<address>)`.
    public var description: String { "TCPListener(\(localAddress))" }
}
