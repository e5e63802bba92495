import CLibUV
import Flow

/// What ``TCPListener`` and ``PipeListener`` share: the listening libuv stream handle and its closing,
/// the accepting of each pending connection, the count of failed accepts, and the connections
/// accepted and still open (their count and the graceful close).
///
/// The handle's `data` field holds this object (see `Owner`): it lives until libuv has closed the
/// handle, whether or not the listener that made it is still referenced. A listener still open when
/// its loop closes is closed then, the same way, so that it is released with the loop.
final class StreamListenerCore: @unchecked Sendable {
    // @unchecked Sendable: the handle, `acceptPending`, `loopClosingObserver`, `failedAccepts` and
    // `closing` are used only in the loop's context (libuv's callbacks run there; `close` and
    // `closeGracefully` hop there, and `failedAcceptCount` reads on the loop); `accepted` is loop-only
    // but for its count's signal.

    let loop: EventLoop
    /// The listening handle (a `uv_tcp_t` or a `uv_pipe_t`), seen as the stream libuv's calls take.
    let handle: UnsafeMutablePointer<uv_stream_t>
    /// The read buffer every connection accepted here shares (they all read on this loop).
    let readBuffer = ReadBuffer()
    /// The connections accepted and not yet closed.
    let accepted: AcceptedConnections
    private let closing = HandleClosing()
    private var failedAccepts = FailureCount.accepts
    /// How failure reports name the listener: the metadata key and value ("address", "127.0.0.1:80").
    private let placeKey: String
    private let place: String
    /// Accepts the pending connection (through ``accept(making:prepare:onAccept:)``), with the
    /// listener's connection type and handler; dropped once the handle is closed.
    private var acceptPending: ((StreamListenerCore) -> Void)?
    /// The loop's observer of its closing (see `EventLoop.whenClosing`), forgotten once the handle is
    /// closed. The loop closes whatever handles are left without a callback, which would never give
    /// back the `data` field's reference: this closes the handle through ``beginClosing()`` first.
    private var loopClosingObserver: Int?

    /// Takes ownership of `handle`, initialized by libuv on `loop` (`uv_tcp_init_ex`, `uv_pipe_init`)
    /// and not listening yet: from here on it is closed through ``beginClosing()``, not just freed.
    /// Loop context only.
    init<Handle>(
        loop: EventLoop, handle: UnsafeMutablePointer<Handle>, placeKey: String, place: String,
        acceptPending: @escaping (StreamListenerCore) -> Void
    ) {
        self.loop = loop
        self.handle = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self)
        self.placeKey = placeKey
        self.place = place
        self.acceptPending = acceptPending
        accepted = AcceptedConnections(loop: loop)
        baseHandle.pointee.data = Owner.retain(self)
        loopClosingObserver = loop.whenClosing { [self] in beginClosing() }
    }

    private var baseHandle: UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)
    }

    /// Starts listening with `backlog` queued connections, after `failure` (the status of the set-up
    /// done before, such as binding) if it is 0; on any failure closes the handle and throws it.
    /// Loop context only.
    func listen(backlog: Int32, after failure: Int32 = 0) throws(EventLoopError) {
        var failure = failure
        if failure == 0 {
            failure = uv_listen(handle, backlog) { server, status in
                Owner.borrow(server?.pointee.data, as: StreamListenerCore.self).connectionPending(status: status)
            }
        }
        guard failure == 0 else {
            beginClosing()
            throw EventLoop.error(failure)
        }
    }

    /// libuv's connection callback: accepts the pending connection, or counts the failure `status` says.
    func connectionPending(status: Int32) {
        guard status == 0, closing.isOpen, let acceptPending else {
            noteFailedAccept(status == 0 ? "the listener is closing" : EventLoop.describe(status))
            return
        }
        acceptPending(self)
    }

    /// Accepts the pending connection into the object `make` returns, readies it with `prepare`
    /// (options, its name among the loop's active resources), counts it until it closes and hands it
    /// to `onAccept`. A connection that cannot be made or accepted is counted as a failed accept.
    func accept<Connection: StreamConnection>(
        making make: () throws(EventLoopError) -> Connection,
        prepare: (Connection) -> Void,
        onAccept: (Connection) -> Void
    ) {
        let accepted = StreamConnection.accept(from: handle, making: make, failed: { noteFailedAccept($0) })
        guard let connection = accepted else { return }
        prepare(connection)
        self.accepted.track(connection)
        onAccept(connection)
    }

    /// Counts a failed accept and reports it through ``FlowDiagnostics`` at the 1st, 2nd, 4th, 8th, ...
    /// failure: a process out of file descriptors fails every accept, and its log must not drown.
    private func noteFailedAccept(_ reason: @autoclosure () -> String) {
        guard failedAccepts.countOne() else { return }
        failedAccepts.report(reason(), loop: loop, placeKey: placeKey, place: place)
    }

    /// How many accepts failed; read on the loop. Callable from any thread.
    func failedAcceptCount(caller: String) -> Int {
        loop.performAndWait(caller) { failedAccepts.count }
    }

    /// How many accepted connections are open, as a signal readable from any thread.
    var openConnections: ReadSignal<Int> { accepted.count.readOnly() }

    /// Stops listening; the future completes once libuv has closed the handle. Callable from any thread.
    func close(caller: String) -> Future<Void> {
        closing.close(on: loop, caller: caller) { [self] in beginClosing() }
    }

    /// Stops listening and closes the accepted connections gracefully (see
    /// ``AcceptedConnections/closeGracefully(deadline:caller:stopListening:)``). Callable from any thread.
    func closeGracefully(deadline: Double, caller: String, stopListening: @escaping @Sendable () -> Future<Void>)
        -> Future<Int>
    {
        accepted.closeGracefully(deadline: deadline, caller: caller, stopListening: stopListening)
    }

    /// Starts closing the handle, once. Loop context only.
    private func beginClosing() {
        closing.closeHandle(handle, on: loop) { handle in
            Owner.release(handle?.pointee.data, as: StreamListenerCore.self).didClose()
        }
    }

    private func didClose() {
        UnsafeMutableRawPointer(handle).deallocate()
        acceptPending = nil
        if let loopClosingObserver { loop.forgetClosingObserver(loopClosingObserver) }
        loopClosingObserver = nil
        closing.didClose()
    }
}
