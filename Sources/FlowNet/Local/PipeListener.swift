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
public final class PipeListener: @unchecked Sendable {
    // @unchecked Sendable: the handle, `onAccept` and `closing` are used only in the loop's context;
    // `listen` runs on the loop (`performAndWait`) and `close()` hops there.

    /// The loop accepting connections.
    public let loop: EventLoop
    /// The socket's path.
    public let path: String

    private let handle: UnsafeMutablePointer<uv_pipe_t>
    private let readBuffer = ReadBuffer()
    private var onAccept: ((PipeConnection) -> Void)?
    private let closing = HandleClosing()
    /// How many times accepting an incoming connection failed, as libuv reports it (running out of file
    /// descriptors, above all); reported through `FlowDiagnostics` as ``TCPListener``'s are. Callable
    /// from any thread (read on the loop).
    public var failedAcceptCount: Int { loop.performAndWait("PipeListener.failedAcceptCount") { failedAccepts.count } }
    private var failedAccepts = FailureCount.accepts
    private let accepted: AcceptedConnections

    /// How many accepted connections are open now (accepted, not yet closed), as a signal that tells
    /// of each change, as ``TCPListener/openConnections``. Readable from any thread.
    public var openConnections: ReadSignal<Int> { accepted.count.readOnly() }

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
        var failure = uv_pipe_bind(handle, path)
        if failure == 0 {
            failure = uv_listen(listener.stream, backlog) { server, status in
                Owner.borrow(server?.pointee.data, as: PipeListener.self).accept(status: status)
            }
        }
        guard failure == 0 else {
            listener.beginClosing()
            throw EventLoop.error(failure)
        }
        loop.nameHandle(handle, kind: .listener, summary: "Unix-socket listener on \(path)", creationSite: nil)
        loop.libuvStateDidChange()
        return listener
    }

    private init(loop: EventLoop, handle: UnsafeMutablePointer<uv_pipe_t>, path: String,
                 onAccept: @escaping (PipeConnection) -> Void) {
        self.loop = loop
        self.handle = handle
        self.path = path
        self.onAccept = onAccept
        accepted = AcceptedConnections(loop: loop)
        handle.pointee.data = Owner.retain(self)
    }

    private var stream: UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self)
    }

    /// libuv's connection callback: accepts the pending connection, or counts the failure `status` says.
    func accept(status: Int32) {
        guard status == 0, closing.isOpen, let onAccept else {
            noteFailedAccept(status == 0 ? "the listener is closing" : EventLoop.describe(status))
            return
        }
        let accepted = StreamConnection.accept(
            from: stream,
            making: { () throws(EventLoopError) in try PipeConnection(loop: loop, readBuffer: readBuffer) },
            failed: { noteFailedAccept($0) })
        guard let connection = accepted else { return }
        connection.nameResource("Unix-socket connection accepted on \(path)")
        self.accepted.track(connection)
        onAccept(connection)
    }

    /// Counts a failed accept and reports it through `FlowDiagnostics` at the 1st, 2nd, 4th, 8th, ...
    /// failure, as ``TCPListener`` does.
    private func noteFailedAccept(_ reason: @autoclosure () -> String) {
        guard failedAccepts.countOne() else { return }
        failedAccepts.report(reason(), loop: loop, placeKey: "path", place: path)
    }

    /// Stops listening and removes the socket file. Connections already accepted stay open. The future
    /// completes once libuv has closed the socket. Callable from any thread.
    ///
    /// ```swift
    /// listener.close().onValue { print("no longer listening") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        closing.close(on: loop, caller: "PipeListener.close") { [self] in beginClosing() }
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
        accepted.closeGracefully(deadline: deadline, caller: "PipeListener.closeGracefully") { [self] in close() }
    }

    private func beginClosing() {
        guard closing.beginClosing() else { return }
        loop.forgetHandle(handle)
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            Owner.release(handle?.pointee.data, as: PipeListener.self).didClose()
        }
        loop.libuvStateDidChange()
    }

    private func didClose() {
        handle.deallocate()
        onAccept = nil
        closing.didClose()
    }
}

extension PipeListener: CustomStringConvertible {
    /// `PipeListener(<path>)`.
    public var description: String { "PipeListener(\(path))" }
}
