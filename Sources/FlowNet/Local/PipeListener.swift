import CLibUV
import Flow

/// A Unix domain socket listening at a path on an `EventLoop`: hands each accepted
/// ``PipeConnection`` to a handler, as ``TCPListener`` does for TCP.
///
/// ```swift
/// let listener = try PipeListener.listen(path: "/tmp/echo.sock", on: .main) { connection in
///     connection.onRead { event in
///         if case .bytes(let bytes) = event { connection.send(copying: bytes) } else { connection.close() }
///     }
/// }
/// ```
///
/// The listener stays open until ``close()``, which also removes the socket file.
public final class PipeListener: Sendable {
    /// The loop accepting connections.
    public let loop: EventLoop
    /// The socket's path.
    public let path: String

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
    /// How many times accepting an incoming connection failed, as libuv reports it (running out of file
    /// descriptors, above all); reported through `FlowDiagnostics` as ``TCPListener``'s are. Callable
    /// from any thread (read on the loop).
    public var failedAcceptCount: Int { core.failedAcceptCount(caller: "PipeListener.failedAcceptCount") }

    /// How many accepted connections are open now (accepted, not yet closed), as a signal that tells
    /// of each change, as ``TCPListener/openConnections``. Readable from any thread.
    public var openConnections: ReadSignal<Int> { core.openConnections }

    /// Listens at `path`. Callable from any thread: off the loop it opens the socket on the loop and
    /// waits for it; from async code use ``listenAsync(path:backlog:on:onAccept:)-(_,_,EventLoop,_)``, which never blocks.
    ///
    /// ```swift
    /// let listener = try PipeListener.listen(path: folder + "/app.sock") { connection in serve(connection) }
    /// ```
    ///
    /// - Parameters:
    ///   - path: the socket's path in the file system.
    ///   - backlog: how many connections the kernel queues before the loop accepts them.
    ///   - loop: the loop that accepts, and that the connections run on.
    ///   - onAccept: called on the loop with each new connection; the handler owns it and must close it.
    /// - Throws: libuv's error: `EADDRINUSE: address already in use` when a file is already at `path`,
    ///   `EACCES: permission denied` when its folder does not exist or may not be written (libuv reports
    ///   both the same way), `ENAMETOOLONG: name too long` for a path longer than a socket's path can be
    ///   (107 bytes), `EINVAL: invalid argument` for an empty path or one holding a NUL byte.
    public static func listen(
        path: String, backlog: Int32 = 511, on loop: EventLoop = .main,
        onAccept: @escaping (PipeConnection) -> Void
    ) throws(EventLoopError) -> PipeListener {
        try loop.performAndWait("PipeListener.listen") { () throws(EventLoopError) in
            try listenOnLoop(path: path, backlog: backlog, on: loop, onAccept: onAccept)
        }
    }

    /// Listens at `path` like ``listen(path:backlog:on:onAccept:)``, from async code: the task waits
    /// for the loop without blocking a thread. Named apart from the synchronous form, which async
    /// callers without `await` keep.
    ///
    /// ```swift
    /// let listener = try await PipeListener.listenAsync(path: folder + "/app.sock", on: loop) { connection in
    ///     connection.close()
    /// }
    /// ```
    public nonisolated(nonsending) static func listenAsync(
        path: String, backlog: Int32 = 511, on loop: EventLoop = .main,
        onAccept: @escaping @Sendable (PipeConnection) -> Void
    ) async throws(EventLoopError) -> PipeListener {
        try await loop.perform("PipeListener.listenAsync") { () throws(EventLoopError) in
            try listenOnLoop(path: path, backlog: backlog, on: loop, onAccept: onAccept)
        }
    }

    private static func listenOnLoop(
        path: String, backlog: Int32, on loop: EventLoop, onAccept: @escaping (PipeConnection) -> Void
    ) throws(EventLoopError) -> PipeListener {
        try SocketPath.validate(path)
        BrokenPipeSignal.ignored
        let handle = UnsafeMutablePointer<uv_pipe_t>.allocate(capacity: 1)
        let status = uv_pipe_init(loop.unsafeLoopPointer, handle, 0)
        guard status == 0 else {
            handle.deallocate()
            throw EventLoop.error(status)
        }
        let listener = PipeListener(loop: loop, handle: handle, path: path, onAccept: onAccept)
        try listener.core.listen(backlog: backlog, after: uv_pipe_bind(handle, path))
        loop.nameHandle(handle, kind: .listener, summary: "Unix-socket listener on \(path)", creationSite: nil)
        loop.libuvStateDidChange()
        return listener
    }

    private init(loop: EventLoop, handle: UnsafeMutablePointer<uv_pipe_t>, path: String,
                 onAccept: @escaping (PipeConnection) -> Void) {
        self.loop = loop
        self.path = path
        let defaults = connectionDefaults
        core = StreamListenerCore(loop: loop, handle: handle, placeKey: "path", place: path) { core in
            core.accept(
                making: { () throws(EventLoopError) in try PipeConnection(loop: loop, readBuffer: core.readBuffer) },
                prepare: { connection in
                    connection.nameResource("Unix-socket connection accepted on \(path)")
                    defaults.prepare(connection)
                },
                onAccept: onAccept)
        }
    }

    /// What libuv's connection callback does with `status`: accepts the pending connection, or counts
    /// the failure `status` says. Loop context only; tests call it to hand in failures.
    func accept(status: Int32) {
        core.connectionPending(status: status)
    }

    /// Stops listening and removes the socket file. Connections already accepted stay open. The future
    /// completes once libuv has closed the socket. Callable from any thread.
    ///
    /// ```swift
    /// listener.close().onValue { print("no longer listening") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        core.close(caller: "PipeListener.close")
    }

    /// Stops accepting (and removes the socket file), lets the open connections finish for up to
    /// `deadline` seconds from now, then closes those still open, as
    /// ``TCPListener/closeGracefully(deadline:)``: the future gives how many the deadline closed.
    /// Callable from any thread.
    ///
    /// ```swift
    /// listener.closeGracefully(deadline: 5).onValue { forced in print("\(forced) closed at the deadline") }
    /// ```
    @discardableResult
    public func closeGracefully(deadline: Double) -> Future<Int> {
        core.closeGracefully(deadline: deadline, caller: "PipeListener.closeGracefully") { [self] in close() }
    }
}

extension PipeListener: CustomStringConvertible {
    /// `PipeListener(<path>)`.
    public var description: String { "PipeListener(\(path))" }
}
