import CLibUV
import Flow

/// A TCP connection on an `EventLoop`: read, write with back-pressure, half-close, close (all of it
/// from ``StreamConnection``), plus its addresses.
///
/// You get one from ``TCPListener`` (each accepted connection) or from
/// ``connect(to:on:)`` / ``connect(host:port:attemptTimeout:on:)``. Reading comes in three shapes: a handler
/// called with each chunk (``StreamConnection/onRead(_:)``, the fast path), one future per chunk (``StreamConnection/read()``), or an
/// `AsyncSequence` (``StreamConnection/chunks``). Writes return a future that completes once libuv has handed the bytes
/// to the kernel (``StreamConnection/write(_:)-(SharedBytes)``); ``StreamConnection/isWritable`` and ``StreamConnection/whenWritable()`` say when to slow
/// down.
///
/// ```swift
/// TCPConnection.connect(host: "127.0.0.1", port: 7000, on: loop)
///     .flatMap { connection in connection.write("hello\n").flatMap { connection.read() } }
///     .onValue { reply in print(reply.map { String(decoding: $0, as: UTF8.self) } ?? "closed") }
/// ```
///
/// The first socket made sets `SIGPIPE` to ignored, process-wide, so that writing to a peer that has
/// gone away fails with `EPIPE` instead of killing the process.
///
/// A connection stays open, and alive, until ``StreamConnection/close()``: dropping the last reference does not
/// close it. Methods returning a future may be called from any thread; the others (the read handler,
/// ``StreamConnection/send(_:completion:)``) only in the loop's context.
public final class TCPConnection: StreamConnection, @unchecked Sendable {
    // @unchecked Sendable: as its superclass's, the TCP handle is used only in the loop's context.

    /// Initialises the handle on `loop`; the caller then accepts into it or connects it.
    init(loop: EventLoop, readBuffer: ReadBuffer) throws(EventLoopError) {
        try super.init(loop: loop, readBuffer: readBuffer, allocating: uv_tcp_t.self, initialize: uv_tcp_init)
    }

    /// The handle as libuv's TCP type.
    var tcpHandle: UnsafeMutablePointer<uv_tcp_t> {
        UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_tcp_t.self)
    }

    // MARK: Addresses

    /// The local address, or `nil` once closed. Callable from any thread.
    public var localAddress: SocketAddress? {
        address(of: uv_tcp_getsockname)
    }

    /// The peer's address, or `nil` once closed or if not connected. Callable from any thread.
    public var remoteAddress: SocketAddress? {
        address(of: uv_tcp_getpeername)
    }

    private func address(
        of query: (UnsafePointer<uv_tcp_t>?, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<Int32>?) -> Int32
    ) -> SocketAddress? {
        loop.performAndWait("TCPConnection address") {
            guard closing.isOpen else { return nil }
            var storage = sockaddr_storage()
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            let status = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(tcpHandle, $0, &length) }
            }
            return status == 0 ? SocketAddress(storage: storage) : nil
        }
    }

    /// Turns Nagle's algorithm off (the default for connections this module makes) or on.
    func setNoDelay(_ isEnabled: Bool) {
        uv_tcp_nodelay(tcpHandle, isEnabled ? 1 : 0)
    }
}

extension TCPConnection: CustomStringConvertible {
    /// `TCPConnection(<loop>)`; addresses are read on the loop, see ``localAddress``.
    public var description: String { "TCPConnection(\(loop.name))" }
}
