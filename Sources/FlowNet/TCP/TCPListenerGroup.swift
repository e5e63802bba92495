import Flow

/// Listeners on several loops sharing one port, for servers that outgrow one core.
///
/// Each loop gets its own listening socket bound with `SO_REUSEPORT`, and the kernel spreads incoming
/// connections between them; a connection then lives on the loop that accepted it, so loops share no
/// state and take no locks. (The other design, accepting on one loop and passing sockets to the others,
/// costs a cross-thread hop per connection and makes the accepting loop a bottleneck.) `SO_REUSEPORT`
/// load balancing needs Linux 3.9 or later.
///
/// ```swift
/// let loops = [EventLoop.main] + (1..<4).map { EventLoop.startOnNewThread(name: "worker-\($0)") }
/// let group = try TCPListenerGroup.listen(port: 8080, loops: loops) { connection in
///     serve(connection)   // runs on the loop that accepted the connection
/// }
/// print("listening on \(group.localAddress) with \(loops.count) loops")
/// try EventLoop.main.run()
/// ```
public final class TCPListenerGroup: Sendable {
    /// One listener per loop, in the order of the loops given.
    public let listeners: [TCPListener]

    /// The address all listeners share.
    public var localAddress: SocketAddress { listeners[0].localAddress }

    /// The port all listeners share (the one chosen when asked for port 0).
    public var port: Int { localAddress.port }

    /// The ``StreamConnection/idleTimeout`` each connection accepted from now on, on any loop, starts
    /// with: seconds it may go without reading or writing a byte before it is closed; `nil` (the
    /// default) sets none. Setting it sets every listener's ``TCPListener/connectionIdleTimeout``;
    /// reading it reads the first listener's. Callable from any thread.
    ///
    /// ```swift
    /// group.connectionIdleTimeout = 30
    /// ```
    public var connectionIdleTimeout: Double? {
        get { listeners[0].connectionIdleTimeout }
        set {
            for listener in listeners { listener.connectionIdleTimeout = newValue }
        }
    }

    /// The ``StreamConnection/timeoutScheduler`` each connection accepted from now on, on any loop,
    /// starts with: the scheduler whose clock times its idle timeout and read deadline; `nil` (the
    /// default) for the connection's loop. Setting it sets every listener's
    /// ``TCPListener/connectionTimeoutScheduler``; reading it reads the first listener's. Tests give a
    /// FlowTesting `VirtualTimeScheduler`'s scheduler, to move the connections' time by hand. Callable
    /// from any thread.
    public var connectionTimeoutScheduler: Scheduler? {
        get { listeners[0].connectionTimeoutScheduler }
        set {
            for listener in listeners { listener.connectionTimeoutScheduler = newValue }
        }
    }

    private init(listeners: [TCPListener]) {
        self.listeners = listeners
    }

    /// Listens on `host` and `port` on every loop in `loops`. With port 0 the first loop picks a free
    /// port and the others join it.
    ///
    /// Each listener is made in its loop's context, waiting for it: every loop must be running on its
    /// own thread (`EventLoop.startOnNewThread(name:)`) or be the caller's own loop.
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name to listen on.
    ///   - port: the port, 0 for any free one (the first loop picks it, the others join it).
    ///   - backlog: how many connections the kernel queues for each listener before its loop accepts them.
    ///   - loops: the loops that listen, one listener each.
    ///   - onAccept: called on the accepting loop with each new connection.
    /// - Throws: libuv's error from the first listener that fails; the listeners already made are
    ///   closed.
    public static func listen(
        host: String = "127.0.0.1", port: Int, backlog: Int32 = 511, loops: [EventLoop],
        onAccept: @escaping @Sendable (TCPConnection) -> Void
    ) throws -> TCPListenerGroup {
        misusePrecondition(!loops.isEmpty, "TCPListenerGroup.listen: give at least one loop")
        var listeners: [TCPListener] = []
        var sharedPort = port
        do {
            for loop in loops {
                // Names are looked up here, on the calling thread, when it is not the loop's.
                let listener = try TCPListener.listen(
                    host: host, port: sharedPort, backlog: backlog, reusePort: true, on: loop, onAccept: onAccept)
                sharedPort = listener.port
                listeners.append(listener)
            }
        } catch {
            for listener in listeners { listener.close() }
            throw error
        }
        return TCPListenerGroup(listeners: listeners)
    }

    /// Listens on `host` and `port` on every loop in `loops`, like
    /// ``listen(host:port:backlog:loops:onAccept:)``, from async code: the name is looked up on
    /// libuv's thread pool, each listener is opened on its loop, and the task waits for them without
    /// blocking a thread. The first loop's listener picks the address (and the port, for port 0); the
    /// others join it at that address.
    ///
    /// ```swift
    /// let loops = (0..<4).map { EventLoop.startOnNewThread(name: "worker-\($0)") }
    /// let group = try await TCPListenerGroup.listenAsync(port: 8080, loops: loops) { connection in
    ///     serve(connection)   // runs on the loop that accepted the connection
    /// }
    /// ```
    ///
    /// - Throws: the error of the first listener that fails; the listeners already made are closed
    ///   before it is thrown.
    public nonisolated(nonsending) static func listenAsync(
        host: String = "127.0.0.1", port: Int, backlog: Int32 = 511, loops: [EventLoop],
        onAccept: @escaping @Sendable (TCPConnection) -> Void
    ) async throws(EventLoopError) -> TCPListenerGroup {
        misusePrecondition(!loops.isEmpty, "TCPListenerGroup.listenAsync: give at least one loop")
        var listeners: [TCPListener] = []
        do {
            listeners.append(try await TCPListener.listenAsync(
                host: host, port: port, backlog: backlog, reusePort: true, on: loops[0], onAccept: onAccept))
            for loop in loops.dropFirst() {
                listeners.append(try await TCPListener.listenAsync(
                    at: listeners[0].localAddress, backlog: backlog, reusePort: true, on: loop, onAccept: onAccept))
            }
        } catch {
            for listener in listeners { _ = try? await listener.close().get() }
            throw error
        }
        return TCPListenerGroup(listeners: listeners)
    }

    /// Closes every listener; the future completes once all are closed. Callable from any thread.
    ///
    /// ```swift
    /// group.close().onValue { print("stopped listening") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        join(listeners.map { $0.close() }).toVoid()
    }

    /// Closes every listener gracefully (``TCPListener/closeGracefully(deadline:)``): none accepts any
    /// more, each loop's open connections get until `deadline` seconds from now, and the future gives
    /// how many connections, on all loops, the deadline closed. Callable from any thread.
    ///
    /// ```swift
    /// group.closeGracefully(deadline: 5).onValue { forced in print("\(forced) closed at the deadline") }
    /// ```
    @discardableResult
    public func closeGracefully(deadline: Double) -> Future<Int> {
        join(listeners.map { $0.closeGracefully(deadline: deadline) }).map(on: .none) { $0.reduce(0, +) }
    }
}
