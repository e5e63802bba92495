import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// A UDP socket on an `EventLoop` (libuv's `uv_udp_t`): send datagrams to addresses, receive them
/// with their sender, optionally connected to one peer, with broadcast and multicast.
///
/// ```swift
/// let socket = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: .main)
/// socket.onReceive { datagram in
///     socket.send(datagram.bytes, to: datagram.sender)   // echo
/// }
/// ```
///
/// The socket stays open until ``close()``; from then on ``connect(to:)`` and the options throw
/// `EBADF: bad file descriptor`. Every method may be called from any thread: off the loop, the
/// synchronous ones run on the loop and wait for it (see `EventLoop.performAndWait(_:)`), and
/// handlers always run on the loop.
public final class UDPSocket: @unchecked Sendable {
    // @unchecked Sendable: the handle and every `var` are used only in the loop's context (every
    // method runs its work there: `performAndWait`, `inContext`); `closing` is loop-only too;
    // `datagramStreams` locks itself.

    /// The loop the socket belongs to.
    public let loop: EventLoop
    /// The address bound; its port is the one chosen when binding port 0.
    public let localAddress: SocketAddress

    private let handle: UnsafeMutablePointer<uv_udp_t>
    private let readBuffer = ReadBuffer()
    private var handler: ((Datagram) -> Void)?
    private var errorHandler: ((EventLoopError) -> Void)?
    private var isReceiving = false
    /// The futures of ``receive()`` waiting for the next datagram.
    private var receivers: [PendingResult<Datagram>] = []
    /// Whether ``datagrams`` was ever asked for: its sequences then keep the socket receiving.
    private var hasDatagramStreams = false
    private let closing = HandleClosing()
    private let datagramStreams = ContinuationFanOut<Datagram>()
    private var isOpen: Bool { closing.isOpen }

    /// Binds a socket to `host` (a numeric address or a name, resolved on the calling thread) and
    /// `port`, 0 for any free port. Callable from any thread: off the loop it opens the socket on the
    /// loop and waits for it; from async code use ``bindAsync(host:port:reuseAddress:on:)``, which never
    /// blocks and looks names up on libuv's thread pool rather than the loop's thread.
    ///
    /// ```swift
    /// let socket = try UDPSocket.bind(host: "::", port: 5353, reuseAddress: true)
    /// ```
    ///
    /// - Parameters:
    ///   - host: a numeric address or a name to bind to.
    ///   - port: the port, 0 for any free one.
    ///   - reuseAddress: lets several sockets bind the same address and port (`SO_REUSEADDR`), as
    ///     multicast receivers do.
    ///   - loop: the loop the socket runs on.
    /// - Throws: libuv's error, such as `EADDRINUSE: address already in use`.
    public static func bind(
        host: String = "127.0.0.1", port: Int = 0, reuseAddress: Bool = false, on loop: EventLoop = .main
    ) throws(EventLoopError) -> UDPSocket {
        loop.assertOpen("UDPSocket.bind")
        let addresses = try NameResolver.resolveNow(host: host, port: port, on: loop)
        return try loop.performAndWait("UDPSocket.bind") { () throws(EventLoopError) in
            try bind(toFirstOf: addresses, reuseAddress: reuseAddress, on: loop)
        }
    }

    /// Binds a socket like ``bind(host:port:reuseAddress:on:)``, from async code: a name is looked up
    /// on libuv's thread pool, the socket is opened on the loop, and the task waits without blocking
    /// a thread. Named apart from the synchronous form, which async callers without `await` keep.
    ///
    /// ```swift
    /// let socket = try await UDPSocket.bindAsync(host: "::1", port: 0, on: loop)
    /// ```
    public nonisolated(nonsending) static func bindAsync(
        host: String = "127.0.0.1", port: Int = 0, reuseAddress: Bool = false, on loop: EventLoop = .main
    ) async throws(EventLoopError) -> UDPSocket {
        let addresses = try await NameResolver.resolveWithoutBlocking(host: host, port: port, on: loop)
        return try await loop.perform("UDPSocket.bindAsync") { () throws(EventLoopError) in
            try bind(toFirstOf: addresses, reuseAddress: reuseAddress, on: loop)
        }
    }

    /// Binds a socket to `address` like ``bind(to:reuseAddress:on:)``, from async code.
    ///
    /// ```swift
    /// let socket = try await UDPSocket.bindAsync(to: SocketAddress(host: "::1", port: 0), on: loop)
    /// ```
    public nonisolated(nonsending) static func bindAsync(
        to address: SocketAddress, reuseAddress: Bool = false, on loop: EventLoop = .main
    ) async throws(EventLoopError) -> UDPSocket {
        try await loop.perform("UDPSocket.bindAsync") { () throws(EventLoopError) in
            try bindOnLoop(to: address, reuseAddress: reuseAddress, on: loop)
        }
    }

    /// Binds to the first of `addresses` that can be bound. Loop context only.
    private static func bind(
        toFirstOf addresses: [SocketAddress], reuseAddress: Bool, on loop: EventLoop
    ) throws(EventLoopError) -> UDPSocket {
        var lastError = EventLoop.error(UV_EINVAL.rawValue)
        for address in addresses {
            do {
                return try bindOnLoop(to: address, reuseAddress: reuseAddress, on: loop)
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Binds a socket to `address`; see ``bind(host:port:reuseAddress:on:)``. Callable from any thread.
    ///
    /// ```swift
    /// let socket = try UDPSocket.bind(to: SocketAddress(host: "::1", port: 0))
    /// ```
    public static func bind(
        to address: SocketAddress, reuseAddress: Bool = false, on loop: EventLoop = .main
    ) throws(EventLoopError) -> UDPSocket {
        try loop.performAndWait("UDPSocket.bind") { () throws(EventLoopError) in
            try bindOnLoop(to: address, reuseAddress: reuseAddress, on: loop)
        }
    }

    private static func bindOnLoop(
        to address: SocketAddress, reuseAddress: Bool, on loop: EventLoop
    ) throws(EventLoopError) -> UDPSocket {
        let handle = UnsafeMutablePointer<uv_udp_t>.allocate(capacity: 1)
        let status = uv_udp_init(loop.unsafeLoopPointer, handle)
        guard status == 0 else {
            handle.deallocate()
            throw EventLoop.error(status)
        }
        let flags = reuseAddress ? UInt32(UV_UDP_REUSEADDR.rawValue) : 0
        var failure = address.withSockaddr { uv_udp_bind(handle, $0, flags) }
        var bound: SocketAddress?
        if failure == 0 {
            var storage = sockaddr_storage()
            var length = Int32(MemoryLayout<sockaddr_storage>.size)
            failure = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_udp_getsockname(handle, $0, &length) }
            }
            bound = SocketAddress(storage: storage)
        }
        let socket = UDPSocket(loop: loop, handle: handle, localAddress: bound ?? address)
        guard failure == 0 else {
            socket.beginClosing()
            throw EventLoop.error(failure)
        }
        loop.nameHandle(handle, kind: .datagramSocket, summary: "UDP socket on \(socket.localAddress)", creationSite: nil)
        loop.libuvStateDidChange()
        return socket
    }

    private init(loop: EventLoop, handle: UnsafeMutablePointer<uv_udp_t>, localAddress: SocketAddress) {
        self.loop = loop
        self.handle = handle
        self.localAddress = localAddress
        handle.pointee.data = Owner.retain(self)
    }

    // MARK: Sending

    /// Sends `bytes` as one datagram to `address` (or, with `nil`, to the peer of a connected socket).
    /// The future completes once libuv has handed the datagram to the kernel, and fails with libuv's
    /// error: `EMSGSIZE: message too long` for a datagram larger than UDP carries, `ECANCELED` if the
    /// socket closes first. Callable from any thread.
    ///
    /// ```swift
    /// socket.send(Array("ping".utf8), to: try SocketAddress(host: "127.0.0.1", port: 9999))
    /// ```
    @discardableResult
    public func send(_ bytes: [UInt8], to address: SocketAddress? = nil) -> Future<Void> {
        if let sent = bytes.withUnsafeBytes({ sendAtOnce($0, to: address) }) { return sent }
        return send(SharedBytes(bytes), to: address)
    }

    /// Sends `bytes` without copying them again; see ``send(_:to:)-([UInt8],_)``.
    ///
    /// ```swift
    /// let announcement = SharedBytes("hello")
    /// socket.send(announcement, to: group)
    /// ```
    @discardableResult
    public func send(_ bytes: SharedBytes, to address: SocketAddress? = nil) -> Future<Void> {
        if let sent = bytes.withUnsafeBytes({ sendAtOnce($0, to: address) }) { return sent }
        let sent = PendingResult<Void>()
        loop.inContext("UDPSocket.send") { [self] in
            guard isOpen else {
                sent.fail(EventLoopError.cancelledByClose)
                return
            }
            let request = UDPSendRequest(bytes: bytes, sent: sent)
            request.request.pointee.data = Owner.retain(request)
            var buffer = uv_buf_init(bytes.base.assumingMemoryBound(to: CChar.self), UInt32(min(bytes.count, Int(UInt32.max))))
            let callback: uv_udp_send_cb = { request, status in
                let send = Owner.release(request?.pointee.data, as: UDPSendRequest.self)
                if status == 0 { send.sent.succeed(()) } else { send.sent.fail(EventLoop.error(status)) }
            }
            let status: Int32
            if let address {
                status = address.withSockaddr { uv_udp_send(request.request, handle, &buffer, 1, $0, callback) }
            } else {
                status = uv_udp_send(request.request, handle, &buffer, 1, nil, callback)
            }
            if status != 0 {
                _ = Owner.release(request.request.pointee.data, as: UDPSendRequest.self)
                sent.fail(EventLoop.error(status))
            } else {
                loop.libuvStateDidChange()
            }
        }
        return sent.future()
    }

    /// The fast path of a send made in the loop's context while nothing else waits to be sent: the kernel
    /// takes the datagram now (`uv_udp_try_send`), with no request, no copy and no callback. `nil` when it
    /// cannot (another thread, a closed socket, a send queue that is not empty, a full socket buffer): the
    /// datagram then goes through `uv_udp_send`, which keeps the order of sends.
    private func sendAtOnce(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress?) -> Future<Void>? {
        guard loop.isInLoopContext, !loop.isClosed, isOpen, let base = bytes.baseAddress else { return nil }
        let start = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: CChar.self))
        var buffer = uv_buf_init(start, UInt32(min(bytes.count, Int(UInt32.max))))
        let status: Int32
        if let address {
            status = address.withSockaddr { uv_udp_try_send(handle, &buffer, 1, $0) }
        } else {
            status = uv_udp_try_send(handle, &buffer, 1, nil)
        }
        if status >= 0 { return Future(()) }
        // EAGAIN: queued sends go first, or the socket's buffer is full; ENOSYS: no such fast path.
        if status == UV_EAGAIN.rawValue || status == UV_ENOSYS.rawValue { return nil }
        return Future(error: EventLoop.error(status))
    }

    /// Connects the socket to `address`: datagrams sent without an address go there, and only that
    /// peer's datagrams are received. Callable from any thread.
    ///
    /// ```swift
    /// try socket.connect(to: server)
    /// socket.send(Array("query".utf8))
    /// ```
    public func connect(to address: SocketAddress) throws(EventLoopError) {
        try loop.performAndWait("UDPSocket.connect") { () throws(EventLoopError) in
            try checkOpen()
            let status = address.withSockaddr { uv_udp_connect(handle, $0) }
            guard status == 0 else { throw EventLoop.error(status) }
        }
    }

    /// The connected peer, or `nil`. Callable from any thread.
    public var remoteAddress: SocketAddress? {
        loop.performAndWait("UDPSocket.remoteAddress") { peerAddress() }
    }

    private func peerAddress() -> SocketAddress? {
        guard isOpen else { return nil }
        var storage = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_udp_getpeername(handle, $0, &length) }
        }
        return status == 0 ? SocketAddress(storage: storage) : nil
    }

    // MARK: Receiving

    /// Receives datagrams, calling `handler` on the loop with each one. Callable from any thread (off
    /// the loop it waits until the handler is in place).
    ///
    /// ```swift
    /// socket.onReceive { datagram in print("\(datagram.bytes.count) bytes from \(datagram.sender)") }
    /// ```
    ///
    /// The handler is dropped when the socket closes, so it may capture the socket.
    public func onReceive(_ handler: @escaping (Datagram) -> Void) {
        loop.performAndWait("UDPSocket.onReceive") {
            guard isOpen else { return }
            self.handler = handler
            startReceiving()
        }
    }

    /// Calls `handler` on the loop with each error receiving reports (such as `ECONNREFUSED: connection
    /// refused` on a connected socket whose peer's port is closed), while the socket receives (after
    /// ``onReceive(_:)`` or ``datagrams``). Without a handler such errors go to `FlowDiagnostics` at
    /// the 1st, 2nd, 4th, 8th, ... one. Either way ``failedReceiveCount`` counts them, and receiving
    /// goes on. Callable from any thread.
    ///
    /// ```swift
    /// socket.onReceiveError { error in print("receiving failed: \(error)") }
    /// ```
    ///
    /// The handler is dropped when the socket closes, so it may capture the socket.
    public func onReceiveError(_ handler: @escaping (EventLoopError) -> Void) {
        loop.performAndWait("UDPSocket.onReceiveError") {
            guard isOpen else { return }
            errorHandler = handler
        }
    }

    /// How many times receiving reported an error (see ``onReceiveError(_:)``). Callable from any thread.
    public var failedReceiveCount: Int { loop.performAndWait("UDPSocket.failedReceiveCount") { failedReceives.count } }
    private var failedReceives = FailureCount(action: "receiving a datagram", countKey: "failedReceiveCount")

    /// The datagrams received from now on, as an `AsyncSequence` that ends when the socket closes. A
    /// consumer that falls behind loses the oldest of more than 1,024 waiting datagrams, as the kernel
    /// would. Callable from any thread.
    ///
    /// ```swift
    /// for await datagram in socket.datagrams { print(datagram.sender) }
    /// ```
    ///
    /// A `@MainActor` consumer's wait holds the main loop (see ``UDPDatagrams``), so that
    /// `EventLoop.run()` returns only after the code after its loop has run.
    public var datagrams: UDPDatagrams {
        let (stream, isLive) = datagramStreams.makeStream(bufferingNewest: 1024)
        if isLive {
            loop.inContext("UDPSocket.datagrams") { [self] in
                hasDatagramStreams = true
                startReceiving()
            }
        }
        return UDPDatagrams(stream: stream)
    }

    /// The next datagram, as a future: the one-shot counterpart of ``onReceive(_:)``, as
    /// `StreamConnection.read()` is for TCP. Callable from any thread.
    ///
    /// ```swift
    /// socket.send(Array("ping".utf8), to: server).flatMap { socket.receive() }
    ///     .onValue { reply in print(String(decoding: reply.bytes, as: UTF8.self)) }
    /// ```
    ///
    /// Every pending `receive()`, the ``onReceive(_:)`` handler and every ``datagrams`` sequence each
    /// get the datagram. With only `receive()` in use, the socket stops receiving once no future
    /// waits, so that datagrams arriving between two calls wait in the kernel's buffer rather than
    /// being lost. The future fails with `ECANCELED` if the socket closes first.
    public func receive() -> Future<Datagram> {
        let next = PendingResult<Datagram>()
        loop.performOrQueue("UDPSocket.receive") { [self] in
            guard isOpen else { return next.fail(EventLoopError.cancelledByClose) }
            receivers.append(next)
            startReceiving()
        }
        return next.future()
    }

    private func startReceiving() {
        guard isOpen, !isReceiving else { return }
        let status = uv_udp_recv_start(handle, { handle, _, buffer in
            let socket = Owner.borrow(handle?.pointee.data, as: UDPSocket.self)
            buffer?.pointee = uv_buf_init(
                socket.readBuffer.base.assumingMemoryBound(to: CChar.self), UInt32(socket.readBuffer.size))
        }, { handle, count, _, address, flags in
            if count < 0 {
                Owner.borrow(handle?.pointee.data, as: UDPSocket.self).receiveFailed(Int32(count))
                return
            }
            guard count > 0 || (count == 0 && address != nil), let address else { return }
            let socket = Owner.borrow(handle?.pointee.data, as: UDPSocket.self)
            var storage = sockaddr_storage()
            let length = address.pointee.sa_family == sa_family_t(AF_INET6)
                ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length)) }
            guard let sender = SocketAddress(storage: storage) else { return }
            socket.deliver(Datagram(
                bytes: Array(UnsafeRawBufferPointer(start: socket.readBuffer.base, count: count)), sender: sender,
                isTruncated: flags & UInt32(UV_UDP_PARTIAL.rawValue) != 0))
        })
        if status == 0 {
            isReceiving = true
            loop.libuvStateDidChange()
        }
    }

    private func receiveFailed(_ status: Int32) {
        let isReported = failedReceives.countOne()
        let error = EventLoop.error(status)
        if let errorHandler {
            errorHandler(error)
        } else if isReported {
            failedReceives.report("\(error)", loop: loop, placeKey: "address", place: "\(localAddress)")
        }
    }

    private func deliver(_ datagram: Datagram) {
        handler?(datagram)
        datagramStreams.yield(datagram)
        let waiting = receivers
        receivers = []
        for receiver in waiting { receiver.succeed(datagram) }
        // Only futures received: the next datagrams wait in the kernel until the next `receive()`.
        if handler == nil, !hasDatagramStreams, receivers.isEmpty, isReceiving, isOpen {
            uv_udp_recv_stop(handle)
            isReceiving = false
            loop.libuvStateDidChange()
        }
    }

    // MARK: Options

    /// Allows sending to broadcast addresses (`SO_BROADCAST`). Callable from any thread.
    ///
    /// ```swift
    /// try socket.setBroadcast(true)
    /// socket.send(Array("anyone?".utf8), to: try SocketAddress(host: "255.255.255.255", port: 9999))
    /// ```
    public func setBroadcast(_ isEnabled: Bool) throws(EventLoopError) {
        try loop.performAndWait("UDPSocket.setBroadcast") { () throws(EventLoopError) in
            try checkOpen()
            let status = uv_udp_set_broadcast(handle, isEnabled ? 1 : 0)
            guard status == 0 else { throw EventLoop.error(status) }
        }
    }

    /// Joins the multicast `group` (such as `239.255.0.1` or `ff02::1`) on `interface` (an address of
    /// a local interface; `nil` lets the kernel choose). Callable from any thread.
    ///
    /// ```swift
    /// try socket.joinMulticastGroup("239.255.0.1")
    /// ```
    ///
    /// - Throws: libuv's error, `EINVAL: invalid argument` for an address that is not a multicast group
    ///   (or holds a NUL byte).
    public func joinMulticastGroup(_ group: String, interface: String? = nil) throws(EventLoopError) {
        try setMembership(group, interface: interface, UV_JOIN_GROUP)
    }

    /// Leaves a multicast group joined with ``joinMulticastGroup(_:interface:)``. Callable from any thread.
    ///
    /// ```swift
    /// try socket.leaveMulticastGroup("239.255.0.1")
    /// ```
    public func leaveMulticastGroup(_ group: String, interface: String? = nil) throws(EventLoopError) {
        try setMembership(group, interface: interface, UV_LEAVE_GROUP)
    }

    /// Whether multicast datagrams this socket sends come back to the sockets of this host (on by
    /// default). Callable from any thread.
    ///
    /// ```swift
    /// try socket.setMulticastLoopback(false)
    /// ```
    public func setMulticastLoopback(_ isEnabled: Bool) throws(EventLoopError) {
        try loop.performAndWait("UDPSocket.setMulticastLoopback") { () throws(EventLoopError) in
            try checkOpen()
            let status = uv_udp_set_multicast_loop(handle, isEnabled ? 1 : 0)
            guard status == 0 else { throw EventLoop.error(status) }
        }
    }

    private func setMembership(_ group: String, interface: String?, _ membership: uv_membership) throws(EventLoopError) {
        try loop.performAndWait("UDPSocket multicast membership") { () throws(EventLoopError) in
            try checkOpen()
            // C would read the addresses only up to a NUL byte: another group or interface than the one given.
            guard group.isWholeCString, interface?.isWholeCString ?? true else { throw EventLoop.error(UV_EINVAL.rawValue) }
            let status = uv_udp_set_membership(handle, group, interface, membership)
            guard status == 0 else { throw EventLoop.error(status) }
        }
    }

    // MARK: Closing

    /// Throws `EBADF` once closing has begun: libuv would act on a closed handle (and `uv_udp_connect`
    /// would even open a new socket for it, which nothing closes), or on freed memory once it is closed.
    private func checkOpen() throws(EventLoopError) {
        guard isOpen else { throw EventLoop.error(UV_EBADF.rawValue) }
    }

    /// Closes the socket: pending sends fail with `ECANCELED`, the ``datagrams`` sequences end, and the
    /// future completes once libuv has closed the handle. Closing twice is harmless. Callable from any
    /// thread.
    ///
    /// ```swift
    /// socket.close().onValue { print("closed") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        closing.close(on: loop, caller: "UDPSocket.close") { [self] in beginClosing() }
    }

    private func beginClosing() {
        guard isOpen else { return }
        datagramStreams.finish()
        closing.closeHandle(handle, on: loop) { handle in
            Owner.release(handle?.pointee.data, as: UDPSocket.self).didClose()
        }
    }

    private func didClose() {
        handle.deallocate()
        handler = nil
        errorHandler = nil
        let waiting = receivers
        receivers = []
        for receiver in waiting { receiver.fail(EventLoopError.cancelledByClose) }
        closing.didClose()
    }
}

extension UDPSocket: CustomStringConvertible {
    /// `UDPSocket(<address>)`.
    public var description: String { "UDPSocket(\(localAddress))" }
}

/// A `uv_udp_send_t`, the bytes it sends (kept until libuv is done) and the result.
final class UDPSendRequest {
    let request = UnsafeMutablePointer<uv_udp_send_t>.allocate(capacity: 1)
    let bytes: SharedBytes
    let sent: PendingResult<Void>

    init(bytes: SharedBytes, sent: PendingResult<Void>) {
        self.bytes = bytes
        self.sent = sent
    }

    deinit {
        request.deallocate()
    }
}
