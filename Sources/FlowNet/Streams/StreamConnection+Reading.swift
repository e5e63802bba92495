import CLibUV
import Flow

extension StreamConnection {
    /// What a read handler is told: bytes, the end of the peer's data, or a failure.
    ///
    /// The bytes of ``bytes(_:)`` are valid only during the handler's call: copy what you keep
    /// (``SharedBytes/init(copying:)``, `Array(buffer)`).
    public enum ReadEvent {
        /// Bytes received, valid until the handler returns.
        case bytes(UnsafeRawBufferPointer)
        /// The peer closed its side (or half-closed it with a shutdown): no more bytes will come.
        /// Writing is still possible.
        case endOfStream
        /// Reading failed, for instance with `ECONNRESET`; close the connection.
        case failed(EventLoopError)
    }

    /// Starts reading, calling `handler` with each chunk as it arrives: the fast path, with no copy
    /// and no allocation per chunk. Callable from any thread (off the loop it waits until the handler
    /// is in place); the handler runs on the loop. A connection has one way of reading: this, or
    /// ``read()`` / ``chunks``.
    ///
    /// ```swift
    /// connection.onRead { event in
    ///     switch event {
    ///     case .bytes(let bytes): connection.send(SharedBytes(copying: bytes))   // echo
    ///     case .endOfStream, .failed: connection.close()
    ///     }
    /// }
    /// ```
    ///
    /// The handler is dropped when the connection closes, so it may capture the connection. Set on a
    /// connection already closing or closed, it is called once, from the loop, with `.failed` and
    /// `ECANCELED`, as ``read()`` fails then.
    public func onRead(_ handler: @escaping (ReadEvent) -> Void) {
        loop.performAndWait("\(type(of: self)).onRead") { setReadHandler(handler) }
    }

    private func setReadHandler(_ handler: @escaping (ReadEvent) -> Void) {
        switch readMode {
        case .futures:
            misuseFailure("\(type(of: self)).onRead: the connection is already read with read() or chunks")
        case .closed:
            failLater(handler)
        case .none, .handler:
            guard closing.isOpen else {
                failLater(handler)
                return
            }
            readMode = .handler(handler)
            if readDeadlineState.hasPassed {
                let late = LoopConfined(handler)
                loop.execute { late.value(.failed(Self.readDeadlineError)) }
            }
            if !isReadingPaused { startLibuvReading() }
        }
    }

    /// Tells a read handler set on a closing or closed connection that reading failed, rather than
    /// leave it waiting for an event that cannot come; from the loop, never from inside the call that
    /// set it.
    private func failLater(_ handler: @escaping (ReadEvent) -> Void) {
        let late = LoopConfined(handler)
        loop.execute { late.value(.failed(EventLoopError.cancelledByClose)) }
    }

    /// Stops reading until ``resumeReading()``: the peer's bytes wait in the kernel, and once its
    /// buffers fill up the peer's writes wait too. This is how a server slows down a client it cannot
    /// keep up with (see ``whenWritable()``). Callable from any thread (off the loop it waits until
    /// reading has stopped).
    ///
    /// ```swift
    /// if !connection.isWritable {
    ///     connection.pauseReading()
    ///     connection.whenWritable().onValue { connection.resumeReading() }
    /// }
    /// ```
    public func pauseReading() {
        loop.performAndWait("\(type(of: self)).pauseReading") {
            isReadingPaused = true
            stopLibuvReading()
        }
    }

    /// Reads again after ``pauseReading()``. Callable from any thread.
    public func resumeReading() {
        loop.performAndWait("\(type(of: self)).resumeReading") {
            guard isReadingPaused else { return }
            isReadingPaused = false
            if case .handler = readMode { startLibuvReading() }
        }
    }

    /// The next chunk of bytes, or `nil` once the peer has closed its side. Fails with the read error
    /// (`ECONNRESET: connection reset by peer`), or `ECANCELED` if the connection is closed first.
    /// Callable from any thread.
    ///
    /// Nothing is read from the socket while no ``read()`` is waiting: a reader that stops asking
    /// slows the peer down instead of filling memory.
    ///
    /// ```swift
    /// connection.read().onValue { chunk in
    ///     if let chunk { print("got \(chunk.count) bytes") } else { print("peer closed") }
    /// }
    /// ```
    public func read() -> Future<[UInt8]?> {
        read(claimingHeldBytesExcept: nil)
    }

    /// ``read()`` for `reader`, a framed sequence reading on: the bytes another framed sequence holds
    /// come first, but not `reader`'s own.
    func read(claimingHeldBytesExcept reader: HeldBytes?) -> Future<[UInt8]?> {
        let pending = PendingResult<[UInt8]?>()
        onLoop { [self] in
            switch readMode {
            case .handler:
                misuseFailure("\(type(of: self)).read(): the connection is already read with onRead(_:)")
            case .closed:
                pending.fail(closeReason ?? EventLoopError.cancelledByClose)
                return
            case .none:
                let reads = FutureReads()
                if readDeadlineState.hasPassed { reads.end = .failure(Self.readDeadlineError) }
                readMode = .futures(reads)
            case .futures:
                break
            }
            guard case .futures(let reads) = readMode else { return }
            reads.waiting.append(pending)
            claimHeldBytes(except: reader)
            serveFutureReads(reads)
        }
        return pending.future(onCancel: { [self] in
            onLoop { [self] in
                guard case .futures(let reads) = readMode else { return }
                reads.waiting.removeAll { $0 === pending }
                serveFutureReads(reads)
            }
        })
    }

    /// The connection's bytes as an `AsyncSequence` of chunks, ending when the peer closes its side.
    ///
    /// ```swift
    /// for try await chunk in connection.chunks {
    ///     print("got \(chunk.count) bytes")
    /// }
    /// ```
    public var chunks: StreamChunks { StreamChunks(connection: self) }

    // MARK: libuv

    func startLibuvReading() {
        guard closing.isOpen, !isReading, !hasReachedEnd else { return }
        let status = uv_read_start(handle, { handle, _, buffer in
            let connection = Owner.borrow(handle?.pointee.data, as: StreamConnection.self)
            let readBuffer = connection.readBuffer
            buffer?.pointee = uv_buf_init(readBuffer.base.assumingMemoryBound(to: CChar.self), UInt32(readBuffer.size))
        }, { stream, count, _ in
            let connection = Owner.borrow(stream?.pointee.data, as: StreamConnection.self)
            connection.didRead(count)
        })
        if status == 0 {
            isReading = true
            loop.libuvStateDidChange()
        } else {
            // Reported from the loop, never from inside the call that asked to read.
            let error = EventLoop.error(status)
            loop.execute { [self] in
                hasReachedEnd = true
                deliver(.failed(error))
            }
        }
    }

    func stopLibuvReading() {
        guard isReading, closing.isOpen else { return }
        uv_read_stop(handle)
        isReading = false
    }

    private func didRead(_ count: Int) {
        if count > 0 {
            if idleTimeoutState != nil { noteActivity() }
            deliver(.bytes(UnsafeRawBufferPointer(start: readBuffer.base, count: count)))
        } else if count == Int(UV_EOF.rawValue) {
            hasReachedEnd = true
            stopLibuvReading()
            deliver(.endOfStream)
        } else if count < 0 {
            hasReachedEnd = true
            stopLibuvReading()
            deliver(.failed(EventLoop.error(Int32(count))))
        }
        // 0: libuv found nothing to read after all (EAGAIN).
    }

    /// The read deadline has passed: reading stops for good, and the readers, now or later, are told
    /// `ETIMEDOUT`. Loop context only.
    func endReadingAtDeadline() {
        hasReachedEnd = true
        readDeadlineState.hasPassed = true
        stopLibuvReading()
        deliver(.failed(Self.readDeadlineError))
    }

    private func deliver(_ event: ReadEvent) {
        switch readMode {
        case .handler(let handler):
            handler(event)
        case .futures(let reads):
            switch event {
            case .bytes(let bytes): reads.chunks.append(Array(bytes))
            case .endOfStream: reads.end = .success(())
            case .failed(let error): reads.end = .failure(error)
            }
            serveFutureReads(reads)
        case .none, .closed:
            break
        }
    }

    /// Hands buffered chunks to waiting readers, and reads from the socket only while someone waits.
    private func serveFutureReads(_ reads: FutureReads) {
        while let reader = reads.waiting.first {
            if let chunk = reads.popChunk() {
                reads.waiting.removeFirst()
                reader.succeed(chunk)
            } else if let end = reads.end {
                reads.waiting.removeFirst()
                switch end {
                case .success: reader.succeed(nil)
                case .failure(let error): reader.fail(error)
                }
            } else {
                break
            }
        }
        if reads.waiting.isEmpty {
            stopLibuvReading()
        } else {
            startLibuvReading()
        }
    }
}

/// How a connection is being read.
enum ReadMode {
    case none
    case handler((StreamConnection.ReadEvent) -> Void)
    case futures(FutureReads)
    case closed

    /// The readers still waiting for a chunk, removed from the mode.
    func takeWaitingReaders() -> [PendingResult<[UInt8]?>] {
        guard case .futures(let reads) = self else { return [] }
        let waiting = reads.waiting
        reads.waiting = []
        return waiting
    }
}

/// The state of ``StreamConnection/read()``: chunks read ahead of demand, readers waiting for one, and
/// how the stream ended.
final class FutureReads {
    /// Bytes a framed reader (``StreamConnection/lines(maximumLength:)``, ``StreamConnection/frames(lengthPrefix:maximumLength:)``
    /// and their signals) took from the socket and did not hand out: they come before `chunks`.
    var unread = PendingBytes()
    /// The framed sequence whose splitter holds bytes it took from the socket and did not hand out,
    /// claimed into `unread` when another reader reads.
    var holder: HeldBytes?
    var chunks: [[UInt8]] = []
    private var firstChunk = 0
    var waiting: [PendingResult<[UInt8]?>] = []
    /// `.success` at the end of the stream, `.failure` after a read error.
    var end: Swift.Result<Void, EventLoopError>?

    func popChunk() -> [UInt8]? {
        if unread.count > 0 { return unread.takeAll().unreadBytes }
        guard firstChunk < chunks.count else { return nil }
        let chunk = chunks[firstChunk]
        firstChunk += 1
        if firstChunk == chunks.count {
            chunks.removeAll(keepingCapacity: true)
            firstChunk = 0
        }
        return chunk
    }
}
