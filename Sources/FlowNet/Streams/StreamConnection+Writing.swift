import CLibUV
import Flow

extension StreamConnection {
    /// Writes `bytes`. The future completes once libuv has handed all of them to the kernel, and fails
    /// with libuv's error (`EPIPE: broken pipe`, `ECONNRESET: connection reset by peer`) or with
    /// `ECANCELED` if the connection is closed first. Writes go out in the order made. Once a write has
    /// failed, the later ones (and ``shutdown()``) fail with its error, unwritten: the peer would otherwise
    /// read them where the failed bytes belonged. Callable from any thread.
    ///
    /// A peer that does not read leaves the future pending once the kernel's buffers are full: a writer
    /// that waits for each write before the next one never holds more than one write in memory.
    ///
    /// ```swift
    /// let response = SharedBytes("HTTP/1.1 204 No Content\r\n\r\n")
    /// connection.write(response).onValue { print("sent") }
    /// ```
    @discardableResult
    public func write(_ bytes: SharedBytes) -> Future<Void> {
        let written = PendingResult<Void>()
        onLoop { [self] in
            send(bytes) { error in
                if let error { written.fail(error) } else { written.succeed(()) }
            }
        }
        return written.future()
    }

    /// Writes a copy of `bytes`; see ``write(_:)-(SharedBytes)``.
    ///
    /// ```swift
    /// connection.write([0x68, 0x69, 0x0a])
    /// ```
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Future<Void> {
        write(SharedBytes(bytes))
    }

    /// Writes the UTF-8 encoding of `text`; see ``write(_:)-(SharedBytes)``.
    ///
    /// ```swift
    /// connection.write("hello\n")
    /// ```
    @discardableResult
    public func write(_ text: String) -> Future<Void> {
        write(SharedBytes(text))
    }

    /// Writes `bytes` without making a future: the hot path for servers. `completion`, if given, runs on
    /// the loop with `nil` once the kernel has the bytes, or with the error (an earlier write's, if one
    /// failed: see ``write(_:)-(SharedBytes)``); never before this call returns. Callable from any
    /// thread: off the loop it waits until the loop has queued the bytes.
    ///
    /// ```swift
    /// connection.send(cannedResponse)
    /// ```
    public func send(_ bytes: SharedBytes, completion: ((EventLoopError?) -> Void)? = nil) {
        guard loop.isInLoopContext, !loop.isClosed else {
            loop.performAndWait("\(type(of: self)).send") { sendOnLoop(bytes, completion: completion) }
            return
        }
        sendOnLoop(bytes, completion: completion)
    }

    private func sendOnLoop(_ bytes: SharedBytes, completion: ((EventLoopError?) -> Void)?) {
        guard closing.isOpen else {
            if let completion { reportLater(completion, .cancelledByClose) }
            return
        }
        if let writeFailure {
            if let completion { reportLater(completion, writeFailure) }
            return
        }
        misusePrecondition(bytes.count <= Int(UInt32.max), "\(type(of: self)).send: a single write is limited to 4 GiB")
        let write = spareWriteRequests.popLast() ?? WriteRequest()
        write.bytes = bytes
        write.completion = completion
        write.connection = self
        write.request.pointee.data = Owner.retain(write)
        var buffer = uv_buf_init(bytes.base.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
        let status = uv_write(write.request, handle, &buffer, 1) { request, status in
            let write = Owner.release(request?.pointee.data, as: WriteRequest.self)
            write.connection?.didWrite(write, status: status)
        }
        guard status == 0 else {
            _ = Owner.release(write.request.pointee.data, as: WriteRequest.self)
            write.reset()
            if let completion { reportLater(completion, EventLoop.error(status)) }
            return
        }
        // libuv tries the write at once when nothing is queued, and may fail it there, reporting only on
        // the loop's next turn: a write made before then would go out after the failed one's hole.
        if write.request.pointee.error != 0, writeFailure == nil {
            writeFailure = EventLoop.error(write.request.pointee.error)
        }
        loop.libuvStateDidChange()
    }

    /// Writes a copy of `bytes` (for instance a chunk a read handler got); see ``send(_:completion:)``.
    ///
    /// ```swift
    /// connection.onRead { event in
    ///     if case .bytes(let bytes) = event { connection.send(copying: bytes) }
    /// }
    /// ```
    public func send(copying bytes: UnsafeRawBufferPointer, completion: ((EventLoopError?) -> Void)? = nil) {
        send(SharedBytes(copying: bytes), completion: completion)
    }

    private func didWrite(_ write: WriteRequest, status: Int32) {
        let completion = write.completion
        write.reset()
        if status != 0, writeFailure == nil { writeFailure = EventLoop.error(status) }
        if status == 0, idleTimeoutState != nil { noteActivity() }
        // Requests are reused while the connection is open; once it closes they go with it.
        if closing.isOpen, spareWriteRequests.count < 8 {
            spareWriteRequests.append(write)
        }
        completion?(status == 0 ? nil : EventLoop.error(status))
        if !writabilityWaiters.isEmpty, closing.isOpen, isWritable {
            let waiters = writabilityWaiters
            writabilityWaiters = []
            for waiter in waiters { waiter.succeed(()) }
        }
    }

    /// Calls `completion` from the loop, after the caller has returned.
    private func reportLater(_ completion: @escaping (EventLoopError?) -> Void, _ error: EventLoopError) {
        let report = LoopConfined(completion)
        loop.execute { report.value(error) }
    }

    // MARK: Back-pressure

    /// The bytes written but not yet taken by the kernel: what this connection holds in memory for a
    /// peer that reads slowly (libuv's `uv_stream_get_write_queue_size`). Callable from any thread.
    public var queuedWriteBytes: Int {
        guard loop.isInLoopContext, !loop.isClosed else {
            return loop.performAndWait("\(type(of: self)).queuedWriteBytes") { queuedWriteBytesOnLoop }
        }
        return queuedWriteBytesOnLoop
    }

    private var queuedWriteBytesOnLoop: Int {
        guard closing.isOpen else { return 0 }
        return uv_stream_get_write_queue_size(handle)
    }

    /// Whether ``queuedWriteBytes`` is below ``writeBufferLimit``, or nothing is queued (whatever the
    /// limit: there is nothing to wait for then): false means stop producing until ``whenWritable()``
    /// completes. Callable from any thread.
    public var isWritable: Bool {
        guard loop.isInLoopContext, !loop.isClosed else {
            return loop.performAndWait("\(type(of: self)).isWritable") { isWritableOnLoop }
        }
        return isWritableOnLoop
    }

    var isWritableOnLoop: Bool {
        let queued = queuedWriteBytesOnLoop
        return queued < loopWriteBufferLimit || queued == 0
    }

    /// Completes once ``isWritable`` is true (at once if it is already), or fails with `ECANCELED` if
    /// the connection closes first. Callable from any thread.
    ///
    /// ```swift
    /// connection.send(chunk)
    /// if !connection.isWritable {
    ///     connection.pauseReading()
    ///     connection.whenWritable().onValue { connection.resumeReading() }
    /// }
    /// ```
    public func whenWritable() -> Future<Void> {
        let writable = PendingResult<Void>()
        onLoop { [self] in
            if !closing.isOpen {
                writable.fail(EventLoopError.cancelledByClose)
            } else if isWritable {
                writable.succeed(())
            } else {
                writabilityWaiters.append(writable)
            }
        }
        return writable.future()
    }

    // MARK: Half-close

    /// Half-closes the connection: once the writes made so far have gone out, the peer reads the end of
    /// the stream. Reading goes on until the peer closes its side. Callable from any thread.
    ///
    /// ```swift
    /// connection.write("last words").flatMap { connection.shutdown() }
    ///     .flatMap { connection.read() }   // the peer may still answer
    /// ```
    @discardableResult
    public func shutdown() -> Future<Void> {
        let done = PendingResult<Void>()
        onLoop { [self] in
            guard closing.isOpen else {
                done.fail(EventLoopError.cancelledByClose)
                return
            }
            if let writeFailure {
                done.fail(writeFailure)
                return
            }
            let request = ShutdownRequest(done)
            request.request.pointee.data = Owner.retain(request)
            let status = uv_shutdown(request.request, handle) { request, status in
                let shutdown = Owner.release(request?.pointee.data, as: ShutdownRequest.self)
                if status == 0 { shutdown.done.succeed(()) } else { shutdown.done.fail(EventLoop.error(status)) }
            }
            if status != 0 {
                _ = Owner.release(request.request.pointee.data, as: ShutdownRequest.self)
                done.fail(EventLoop.error(status))
            } else {
                loop.libuvStateDidChange()
            }
        }
        return done.future()
    }
}

/// A `uv_write_t` and what it writes. Reused by its connection while it stays open.
final class WriteRequest {
    let request = UnsafeMutablePointer<uv_write_t>.allocate(capacity: 1)
    /// Kept until libuv is done with the memory it points into.
    var bytes: SharedBytes?
    var completion: ((EventLoopError?) -> Void)?
    var connection: StreamConnection?

    func reset() {
        bytes = nil
        completion = nil
        connection = nil
    }

    deinit {
        request.deallocate()
    }
}

/// A `uv_shutdown_t` and the result it reports.
final class ShutdownRequest {
    let request = UnsafeMutablePointer<uv_shutdown_t>.allocate(capacity: 1)
    let done: PendingResult<Void>

    init(_ done: PendingResult<Void>) { self.done = done }

    deinit {
        request.deallocate()
    }
}

/// A value that is only used on one loop, carried through a `@Sendable` job queued on that same loop.
struct LoopConfined<Value>: @unchecked Sendable {
    // @unchecked Sendable: made on the loop, used by a job `EventLoop.execute` runs on the same loop.
    let value: Value

    init(_ value: Value) { self.value = value }
}
