import CLibUV
import Flow

/// A connection over a Unix domain socket or a pipe (libuv's `uv_pipe_t`), with the API of
/// ``TCPConnection``: everything of ``StreamConnection``.
///
/// ```swift
/// PipeConnection.connect(toPath: "/tmp/echo.sock", on: loop)
///     .flatMap { connection in connection.write("hello\n").flatMap { connection.read() } }
///     .onValue { reply in print(reply.map { String(decoding: $0, as: UTF8.self) } ?? "closed") }
/// ```
///
/// Connections come from ``PipeListener`` (accepted), ``connect(toPath:on:)``, ``open(fileDescriptor:on:)``
/// (a descriptor the process already has, such as an inherited pipe), and FlowSystem's child processes
/// (their standard streams).
public final class PipeConnection: StreamConnection, @unchecked Sendable {
    // @unchecked Sendable: as its superclass's, the pipe handle is used only in the loop's context.

    /// Initialises the handle on `loop`; the caller then accepts into it, connects it or opens a
    /// descriptor in it.
    package init(loop: EventLoop, readBuffer: ReadBuffer = ReadBuffer()) throws(EventLoopError) {
        try super.init(loop: loop, readBuffer: readBuffer, allocating: uv_pipe_t.self) { loop, pipe in
            uv_pipe_init(loop, pipe, 0)
        }
    }

    /// The handle as libuv's pipe type.
    package var pipeHandle: UnsafeMutablePointer<uv_pipe_t> {
        UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_pipe_t.self)
    }

    /// Connects to the Unix domain socket at `path`. Fails with libuv's error:
    /// `ENOENT: no such file or directory` when nothing is there, `ECONNREFUSED: connection refused` when
    /// nobody listens, `EACCES: permission denied`, `ENAMETOOLONG: name too long` for a path longer than a
    /// socket's path can be (107 bytes), `EINVAL: invalid argument` for an empty path or one holding a NUL
    /// byte. Callable from any thread.
    ///
    /// ```swift
    /// PipeConnection.connect(toPath: "/run/app.sock").onValue { connection in connection.write("status\n") }
    /// ```
    public static func connect(toPath path: String, on loop: EventLoop = .main) -> Future<PipeConnection> {
        do {
            try SocketPath.validate(path)
        } catch {
            return Future(error: error)
        }
        let attempt = ConnectAttempt<PipeConnection>()
        loop.inContext {
            let make = { () throws(EventLoopError) in try PipeConnection(loop: loop) }
            attempt.start(make: make) { connection, request, callback in
                // Errors, even an invalid path, come back through the callback.
                connection.nameResource("Unix-socket connection to \(path)")
                uv_pipe_connect(request, connection.pipeHandle, path, callback)
                return 0
            }
        }
        return attempt.connected.future(onCancel: { loop.inContext { attempt.cancel() } })
    }

    /// Wraps a descriptor this process already has open (a pipe or a stream socket; for a terminal,
    /// see FlowSystem's `StandardStreams`). The connection owns the descriptor from then on and closes
    /// it; when this throws, the descriptor stays the caller's. Callable from any thread (off the loop
    /// it waits for the loop).
    ///
    /// ```swift
    /// let input = try PipeConnection.open(fileDescriptor: 0, on: .main)   // standard input, a pipe
    /// ```
    ///
    /// - Throws: libuv's error, or `EPROTOTYPE: protocol wrong type for socket` for a datagram (UDP)
    ///   socket: read as a stream it would lose where its datagrams begin and end, and an empty
    ///   datagram would read as the end of the stream. Use `UDPSocket` for datagrams.
    public static func open(fileDescriptor: Int32, on loop: EventLoop = .main) throws(EventLoopError) -> PipeConnection {
        try loop.performAndWait("PipeConnection.open") { () throws(EventLoopError) in
            guard uv_guess_handle(fileDescriptor) != UV_UDP else { throw EventLoop.error(UV_EPROTOTYPE.rawValue) }
            let connection = try PipeConnection(loop: loop)
            let status = uv_pipe_open(connection.pipeHandle, fileDescriptor)
            guard status == 0 else {
                connection.beginClosing()
                throw EventLoop.error(status)
            }
            connection.nameResource("pipe on descriptor \(fileDescriptor)")
            return connection
        }
    }

    /// Wraps a descriptor like ``open(fileDescriptor:on:)``, from async code, without blocking a thread.
    ///
    /// ```swift
    /// let input = try await PipeConnection.openAsync(fileDescriptor: descriptor, on: loop)
    /// ```
    public nonisolated(nonsending) static func openAsync(fileDescriptor: Int32, on loop: EventLoop = .main) async throws(EventLoopError) -> PipeConnection {
        try await loop.perform("PipeConnection.openAsync") { () throws(EventLoopError) in
            try open(fileDescriptor: fileDescriptor, on: loop)
        }
    }

    /// The path of the socket this end is bound to (a listener's path), or `nil`. Callable from any
    /// thread.
    public var localPath: String? { name(of: uv_pipe_getsockname) }

    /// The path of the socket at the other end, or `nil` (a pipe has none). Callable from any thread.
    public var remotePath: String? { name(of: uv_pipe_getpeername) }

    private func name(
        of query: (UnsafePointer<uv_pipe_t>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?) -> Int32
    ) -> String? {
        loop.performAndWait("PipeConnection path") {
            guard closing.isOpen else { return nil }
            var buffer = [CChar](repeating: 0, count: 256)
            var length = buffer.count
            guard query(pipeHandle, &buffer, &length) == 0, length > 0 else { return nil }
            return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }
}

extension PipeConnection: CustomStringConvertible {
    /// `PipeConnection(<loop>)`.
    public var description: String { "PipeConnection(\(loop.name))" }
}
