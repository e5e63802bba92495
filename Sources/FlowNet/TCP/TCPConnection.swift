import CLibUV
import Flow

/// A TCP connection on an ``EventLoop``: read, write with back-pressure, half-close, close.
///
/// You get one from ``TCPListener`` (each accepted connection) or from
/// ``connect(to:on:)`` / ``connect(host:port:on:)``. Reading comes in three shapes: a handler
/// called with each chunk (``onRead(_:)``, the fast path), one future per chunk (``read()``), or an
/// `AsyncSequence` (``chunks``). Writes return a future that completes once libuv has handed the bytes
/// to the kernel (``write(_:)-(SharedBytes)``); ``isWritable`` and ``whenWritable()`` say when to slow
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
/// A connection stays open, and alive, until ``close()``: dropping the last reference does not
/// close it. Methods returning a future may be called from any thread; the others (the read handler,
/// ``send(_:completion:)``) only in the loop's context.
public final class TCPConnection: @unchecked Sendable {
    // @unchecked Sendable: the libuv handle and every `var` below are used only in the loop's context.
    // Loop-only methods check it with `assertInLoopContext`; the methods callable from any thread hop to
    // the loop (`onLoop`) before touching anything.

    /// The loop this connection belongs to.
    public let loop: EventLoop

    let handle: UnsafeMutablePointer<uv_tcp_t>
    let readBuffer: ReadBuffer

    enum Lifecycle {
        case open
        case closing
        case closed
    }

    var lifecycle = Lifecycle.open
    var closeWaiters: [PendingResult<Void>] = []

    // Reading (see TCPConnection+Reading.swift).
    var readMode = ReadMode.none
    var isReading = false
    var isReadingPaused = false
    var hasReachedEnd = false

    // Writing (see TCPConnection+Writing.swift).
    var writabilityWaiters: [PendingResult<Void>] = []
    var spareWriteRequests: [WriteRequest] = []

    /// Bytes queued by ``write(_:)-(SharedBytes)`` and ``send(_:completion:)`` but not yet taken by the
    /// kernel at which ``isWritable`` turns false. Loop context only. Defaults to 256 KiB.
    public var writeBufferLimit = 256 * 1024

    /// Initialises the handle on `loop`; the caller then accepts into it or connects it.
    init(loop: EventLoop, readBuffer: ReadBuffer) throws(EventLoopError) {
        loop.assertInLoopContext("TCPConnection")
        BrokenPipeSignal.ignored
        self.loop = loop
        self.readBuffer = readBuffer
        handle = .allocate(capacity: 1)
        let status = uv_tcp_init(loop.unsafeLoopPointer, handle)
        guard status == 0 else {
            // Nothing was registered with libuv: the memory can go at once.
            handle.deallocate()
            lifecycle = .closed
            throw EventLoop.error(status)
        }
        handle.pointee.data = Owner.retain(self)
    }

    // MARK: Addresses

    /// The local address, or `nil` once closed. Loop context only.
    public var localAddress: SocketAddress? {
        address(of: uv_tcp_getsockname)
    }

    /// The peer's address, or `nil` once closed or if not connected. Loop context only.
    public var remoteAddress: SocketAddress? {
        address(of: uv_tcp_getpeername)
    }

    private func address(
        of query: (UnsafePointer<uv_tcp_t>?, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<Int32>?) -> Int32
    ) -> SocketAddress? {
        loop.assertInLoopContext("TCPConnection address")
        guard lifecycle == .open else { return nil }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { query(handle, $0, &length) }
        }
        return status == 0 ? SocketAddress(storage: storage) : nil
    }

    /// Whether the connection is open (not closing or closed). Loop context only.
    public var isOpen: Bool {
        loop.assertInLoopContext("TCPConnection.isOpen")
        return lifecycle == .open
    }

    /// Turns Nagle's algorithm off (the default for connections this module makes) or on.
    func setNoDelay(_ isEnabled: Bool) {
        uv_tcp_nodelay(handle, isEnabled ? 1 : 0)
    }

    // MARK: Closing

    /// Closes the connection. Pending writes fail with `ECANCELED`, a pending ``read()`` fails the
    /// same way, and the returned future completes once libuv has closed the handle (its memory is
    /// freed then). Closing twice is harmless. Callable from any thread.
    ///
    /// ```swift
    /// connection.close().onValue { print("closed") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        let closed = PendingResult<Void>()
        onLoop { [self] in
            switch lifecycle {
            case .closed:
                closed.succeed(())
            case .closing:
                closeWaiters.append(closed)
            case .open:
                closeWaiters.append(closed)
                beginClosing()
            }
        }
        return closed.future()
    }

    /// Closes the handle, unless already closing. Loop context only.
    func beginClosing() {
        guard lifecycle == .open else { return }
        lifecycle = .closing
        uv_close(handle.asHandle) { handle in
            let connection = Owner.release(handle?.pointee.data, as: TCPConnection.self)
            connection.didClose()
        }
        loop.libuvStateDidChange()
    }

    /// The close callback: libuv is done with the handle, and has already failed its pending writes.
    private func didClose() {
        lifecycle = .closed
        handle.deallocate()
        let error = EventLoopError.cancelledByClose
        // Handlers may capture this connection: dropping them here breaks that cycle.
        let pendingReads = readMode.takeWaitingReaders()
        readMode = .closed
        for reader in pendingReads { reader.fail(error) }
        let writability = writabilityWaiters
        writabilityWaiters = []
        for waiter in writability { waiter.fail(error) }
        spareWriteRequests = []
        let waiters = closeWaiters
        closeWaiters = []
        for waiter in waiters { waiter.succeed(()) }
    }

    // MARK: Loop context

    /// Runs `work` in the loop's context: now if already there, else queued on the loop.
    func onLoop(_ work: @escaping @Sendable () -> Void) {
        if loop.isInLoopContext {
            work()
        } else {
            loop.execute(work)
        }
    }
}

extension TCPConnection: CustomStringConvertible {
    /// `TCPConnection(<loop>)`; addresses are read on the loop, see ``localAddress``.
    public var description: String { "TCPConnection(\(loop.name))" }
}
