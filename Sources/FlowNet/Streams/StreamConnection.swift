import CLibUV
import Flow

/// A byte stream on an `EventLoop`: read, write with back-pressure, half-close, close. The connection
/// type shared by ``TCPConnection`` (TCP), ``PipeConnection`` (Unix domain sockets and pipes) and the
/// standard streams and pipes of FlowSystem's processes.
///
/// Reading comes in three shapes: a handler called with each chunk (``onRead(_:)``, the fast path), one
/// future per chunk (``read()``), or an `AsyncSequence` (``chunks``). Writes return a future that
/// completes once libuv has handed the bytes to the kernel (``write(_:)-(SharedBytes)``);
/// ``isWritable`` and ``whenWritable()`` say when to slow down.
///
/// ```swift
/// connection.write("hello\n").flatMap { connection.read() }
///     .onValue { reply in print(reply.map { String(decoding: $0, as: UTF8.self) } ?? "closed") }
/// ```
///
/// A connection stays open, and alive, until ``close()``: dropping the last reference does not
/// close it. Every method may be called from any thread: off the loop, the synchronous ones (the read
/// handler, ``send(_:completion:)``) run on the loop and wait for it, and handlers and completions
/// always run on the loop.
public class StreamConnection: @unchecked Sendable {
    // @unchecked Sendable: the libuv handle and every `var` below are used only in the loop's context.
    // Every public method runs its work there: at once in the loop's context, otherwise through
    // `EventLoop.performAndWait` (methods with a result) or `onLoop` (methods returning a future).

    /// The loop this connection belongs to.
    public let loop: EventLoop

    /// The libuv stream; its memory is the concrete handle type's (`uv_tcp_t`, `uv_pipe_t`, `uv_tty_t`),
    /// allocated by the subclass and freed in the close callback.
    package let handle: UnsafeMutablePointer<uv_stream_t>
    let readBuffer: ReadBuffer

    /// Whether closing has begun and whether libuv has closed the handle; the close futures waiting.
    /// Package-visible so that code of this package (HTTPHello's sessions) can learn that someone else
    /// closed the connection (``HandleClosing/whenClosed(_:)``).
    package let closing = HandleClosing()

    // Reading (see StreamConnection+Reading.swift).
    var readMode = ReadMode.none
    var isReading = false
    var isReadingPaused = false
    var hasReachedEnd = false

    // Writing (see StreamConnection+Writing.swift).
    var writabilityWaiters: [PendingResult<Void>] = []
    var spareWriteRequests: [WriteRequest] = []
    /// The error of the first write that failed: the writes after it fail with it too, unwritten.
    var writeFailure: EventLoopError?

    /// Bytes queued by ``write(_:)-(SharedBytes)`` and ``send(_:completion:)`` but not yet taken by the
    /// kernel at which ``isWritable`` turns false. Callable from any thread. Defaults to 256 KiB; 0 holds
    /// nothing back; a negative limit stops the program with a message.
    public var writeBufferLimit: Int {
        get {
            loop.performAndWait("\(type(of: self)).writeBufferLimit") { loopWriteBufferLimit }
        }
        set {
            misusePrecondition(
                newValue >= 0,
                "\(type(of: self)).writeBufferLimit: the limit must not be negative, not \(newValue)")
            loop.performAndWait("\(type(of: self)).writeBufferLimit") { loopWriteBufferLimit = newValue }
        }
    }
    var loopWriteBufferLimit = 256 * 1024

    // The connection-wide idle timeout, the read deadline and the scheduler timing them, nil for the
    // loop (see StreamConnection+IdleTimeout.swift and StreamConnection+ReadDeadline.swift).
    var idleTimeoutState: IdleTimeoutState?
    var readDeadlineState = ReadDeadlineState()
    var loopTimeoutScheduler: Scheduler?
    /// ``timeoutScheduler`` for ``read(timeout:)``, which arms its timer on the caller's thread.
    let timedReadScheduler = Locked<Scheduler?>(nil)
    /// Why the connection closed, when the library closed it: what reads fail with afterwards.
    var closeReason: Error?
    /// What ``EventLoop/activeResources()`` lists the connection as, before its idle timeout.
    var resourceSummary: String

    /// Takes ownership of `handle`, which `initialize` sets up on `loop` (`uv_tcp_init`, `uv_pipe_init`):
    /// on failure the memory is freed at once, since nothing was registered with libuv.
    package init<Handle>(
        loop: EventLoop, readBuffer: ReadBuffer, allocating: Handle.Type,
        initialize: (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<Handle>) -> Int32
    ) throws(EventLoopError) {
        loop.assertInLoopContext("\(Self.self)")
        BrokenPipeSignal.ignored
        self.loop = loop
        self.readBuffer = readBuffer
        let typed = UnsafeMutablePointer<Handle>.allocate(capacity: 1)
        handle = UnsafeMutableRawPointer(typed).assumingMemoryBound(to: uv_stream_t.self)
        let status = initialize(loop.unsafeLoopPointer, typed)
        guard status == 0 else {
            typed.deallocate()
            throw EventLoop.error(status)
        }
        // Named more precisely once connected or accepted (``nameResource(_:)``).
        resourceSummary = Handle.self == uv_tcp_t.self ? "TCP connection" : Handle.self == uv_tty_t.self ? "terminal" : "pipe connection"
        handle.pointee.data = Owner.retain(self)
        loop.nameHandle(handle, kind: .connection, summary: resourceSummary, creationSite: nil)
    }

    /// Names the connection in ``EventLoop/activeResources()``: `TCP connection to 127.0.0.1:5000`.
    package func nameResource(_ summary: String) {
        resourceSummary = summary
        listResource()
    }

    /// Lists the connection in ``EventLoop/activeResources()`` by its summary, with its idle timeout if it
    /// has one. Loop context only.
    func listResource() {
        let idleTimeout = idleTimeoutState.map { ", idle timeout \($0.seconds) s" } ?? ""
        loop.nameHandle(handle, kind: .connection, summary: resourceSummary + idleTimeout, creationSite: nil)
    }

    /// Whether the connection is open (not closing or closed). Callable from any thread.
    public var isOpen: Bool {
        loop.performAndWait("\(type(of: self)).isOpen") { closing.isOpen }
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
        closing.close(on: loop, caller: "\(type(of: self)).close") { [self] in beginClosing() }
    }

    /// Closes the handle, unless already closing. Loop context only.
    func beginClosing() {
        closing.closeHandle(handle, on: loop) { handle in
            Owner.release(handle?.pointee.data, as: StreamConnection.self).didClose()
        }
    }

    /// The close callback: libuv is done with the handle, and has already failed its pending writes.
    private func didClose() {
        UnsafeMutableRawPointer(handle).deallocate()
        disposeIdleTimer()
        readDeadlineState.disposeTimer()
        let error = closeReason ?? EventLoopError.cancelledByClose
        // Handlers may capture this connection: dropping them here breaks that cycle.
        let pendingReads = readMode.takeWaitingReaders()
        readMode = .closed
        for reader in pendingReads { reader.fail(error) }
        let writability = writabilityWaiters
        writabilityWaiters = []
        for waiter in writability { waiter.fail(error) }
        spareWriteRequests = []
        closing.didClose()
    }

    // MARK: Loop context

    /// Runs `work` in the loop's context: now if already there, else queued on the loop.
    func onLoop(_ work: @escaping @Sendable () -> Void) {
        loop.performOrQueue("\(type(of: self))", work)
    }
}

