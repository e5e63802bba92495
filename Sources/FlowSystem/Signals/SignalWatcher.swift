import CLibUV
import Flow
import FlowNet
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Watches operating-system signals (`SIGTERM`, `SIGINT`, `SIGHUP`, ...) on an `EventLoop` through
/// libuv's `uv_signal`: each delivery is handed to a handler on the loop and to every ``signals``
/// sequence. While a watcher is open the process no longer takes the signal's default action (for
/// `SIGTERM`, ending the process): the program decides.
///
/// ```swift
/// let watcher = SignalWatcher.watch([.terminate, .interrupt], on: .main) { signal in
///     print("\(signal): stopping")
///     listener.close()
/// }
/// ```
///
/// The signals watched are unblocked on the loop's thread: a process started from a Dispatch thread
/// inherits a mask that blocks them, and would otherwise never see them.
///
/// For the first signal only, ``first(of:keepsLoopAlive:on:)`` gives a future.
///
/// A watcher stays open until ``close()``. By default it keeps its loop running (`EventLoop.run()`
/// does not return while a watcher is open); with `keepsLoopAlive: false` it does not, which suits a
/// server whose loop should end once its listeners and connections are closed.
///
/// Close watchers before `EventLoop.close()`: closing the loop closes their libuv handles without
/// telling them. ``close()`` then fails with `EventLoopError.closed`, ends their ``signals``
/// sequences and frees what the handles held.
public final class SignalWatcher: @unchecked Sendable {
    // @unchecked Sendable: `handles`, `handler` and `closing` are used only in the loop's context
    // (`watch` runs on the loop, `close()` hops there); `signalStreams` locks itself.

    /// The loop the signals are delivered on.
    public let loop: EventLoop
    /// The signals watched.
    public let watchedSignals: [ProcessSignal]

    private var handles: [UnsafeMutablePointer<uv_signal_t>] = []
    private var openHandleCount = 0
    private var handler: ((ProcessSignal) -> Void)?
    private let closing = HandleClosing()
    private let signalStreams = ContinuationFanOut<ProcessSignal>()

    private init(loop: EventLoop, signals: [ProcessSignal], handler: ((ProcessSignal) -> Void)?) {
        self.loop = loop
        watchedSignals = signals
        self.handler = handler
    }

    /// The signals a fault raises in the faulting thread, which cannot be watched.
    static let faultSignals: Set<Int32> = [SIGSEGV, SIGBUS, SIGFPE, SIGILL]

    /// Starts watching `signals` on `loop`, calling `handler` on the loop with each one received.
    /// Callable from any thread: off the loop it starts watching on the loop and waits for it; from
    /// async code use ``watchAsync(_:keepsLoopAlive:on:handler:)-(_,_,EventLoop,_)``, which never blocks.
    ///
    /// ```swift
    /// let reloads = try SignalWatcher.watch([.hangUp]) { _ in reloadConfiguration() }
    /// ```
    ///
    /// - Parameters:
    ///   - signals: the signals to watch; `SIGKILL` and `SIGSTOP` cannot be watched, and neither can the
    ///     fault signals `SIGSEGV`, `SIGBUS`, `SIGFPE` and `SIGILL` (the faulting instruction would run
    ///     again after each, for good).
    ///   - keepsLoopAlive: whether the open watcher keeps `EventLoop.run()` from returning.
    ///   - loop: the loop that watches.
    ///   - handler: called on the loop with each signal received; dropped when the watcher closes.
    /// - Throws: libuv's error, `EINVAL: invalid argument` for a signal that cannot be watched.
    public static func watch(
        _ signals: [ProcessSignal], keepsLoopAlive: Bool = true, on loop: EventLoop = .main,
        handler: ((ProcessSignal) -> Void)? = nil
    ) throws(EventLoopError) -> SignalWatcher {
        try loop.performAndWait("SignalWatcher.watch") { () throws(EventLoopError) in
            try watchOnLoop(signals, keepsLoopAlive: keepsLoopAlive, on: loop, handler: handler)
        }
    }

    /// Starts watching `signals` like ``watch(_:keepsLoopAlive:on:handler:)``, from async code: the
    /// task waits for the loop without blocking a thread. Named apart from the synchronous form, which
    /// async callers without `await` keep.
    ///
    /// ```swift
    /// let watcher = try await SignalWatcher.watchAsync([.hangUp], on: loop) { _ in reload() }
    /// ```
    public nonisolated(nonsending) static func watchAsync(
        _ signals: [ProcessSignal], keepsLoopAlive: Bool = true, on loop: EventLoop = .main,
        handler: (@Sendable (ProcessSignal) -> Void)? = nil
    ) async throws(EventLoopError) -> SignalWatcher {
        try await loop.perform("SignalWatcher.watchAsync") { () throws(EventLoopError) in
            try watchOnLoop(signals, keepsLoopAlive: keepsLoopAlive, on: loop, handler: handler)
        }
    }

    private static func watchOnLoop(
        _ signals: [ProcessSignal], keepsLoopAlive: Bool, on loop: EventLoop,
        handler: ((ProcessSignal) -> Void)?
    ) throws(EventLoopError) -> SignalWatcher {
        // A fault signal raised by the faulting instruction returns to it once libuv's handler noted it,
        // and the fault repeats for good: such a watcher would hang the program rather than report.
        if signals.contains(where: { SignalWatcher.faultSignals.contains($0.rawValue) }) {
            throw EventLoop.error(UV_EINVAL.rawValue)
        }
        let watcher = SignalWatcher(loop: loop, signals: signals, handler: handler)
        for signal in signals {
            let handle = UnsafeMutablePointer<uv_signal_t>.allocate(capacity: 1)
            let status = uv_signal_init(loop.unsafeLoopPointer, handle)
            guard status == 0 else {
                handle.deallocate()
                watcher.beginClosing()
                throw EventLoop.error(status)
            }
            handle.pointee.data = Owner.retain(watcher)
            watcher.handles.append(handle)
            watcher.openHandleCount += 1
            let started = uv_signal_start(handle, { handle, number in
                Owner.borrow(handle?.pointee.data, as: SignalWatcher.self).deliver(ProcessSignal(rawValue: number))
            }, signal.rawValue)
            guard started == 0 else {
                watcher.beginClosing()
                throw EventLoop.error(started)
            }
            SignalMask.unblock(signal.rawValue)
            loop.nameHandle(handle, kind: .watcher, summary: "watcher of \(signal)", creationSite: nil)
            if !keepsLoopAlive {
                uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
            }
        }
        loop.libuvStateDidChange()
        return watcher
    }

    /// A future of the first of `signals` received; the watching stops then. Cancelling the future
    /// stops it too. Callable from any thread.
    ///
    /// ```swift
    /// let stop = SignalWatcher.first(of: [.terminate, .interrupt])
    /// let signal = try EventLoop.main.run(until: stop)
    /// print("stopping on \(signal)")
    /// ```
    ///
    /// Fails with libuv's error if the signals cannot be watched.
    public static func first(
        of signals: [ProcessSignal], keepsLoopAlive: Bool = true, on loop: EventLoop = .main
    ) -> Future<ProcessSignal> {
        let received = PendingResult<ProcessSignal>()
        let watcherBox = Locked<SignalWatcher?>(nil)
        loop.inContext {
            // Cancelled before the loop got here: watch nothing.
            guard !received.isCompleted else { return }
            do {
                let watcher = try SignalWatcher.watch(signals, keepsLoopAlive: keepsLoopAlive, on: loop) { signal in
                    received.succeed(signal)
                    watcherBox.withLock { $0 }?.close()
                }
                watcherBox.withLock { $0 = watcher }
                // Cancelled from another thread while the watcher was being made: the cancellation
                // found no watcher to close, so close it here.
                if received.isCompleted { watcher.close() }
            } catch {
                received.fail(error)
            }
        }
        return received.future(onCancel: {
            // Completes `received`, so that a watch the loop has not started yet never starts.
            received.fail(FutureError.aborted)
            watcherBox.withLock { $0 }?.close()
        })
    }

    /// The signals received from now on, as an `AsyncSequence` that ends when the watcher closes.
    /// Each use of the property starts a new sequence; a consumer that falls behind loses the oldest
    /// of more than 64 waiting signals. Callable from any thread.
    ///
    /// ```swift
    /// for await signal in watcher.signals {
    ///     print("received \(signal)")
    /// }
    /// ```
    public var signals: AsyncStream<ProcessSignal> {
        signalStreams.makeStream(bufferingNewest: 64).stream
    }

    private func deliver(_ signal: ProcessSignal) {
        guard closing.isOpen else { return }
        handler?(signal)
        signalStreams.yield(signal)
    }

    /// Stops watching: the process takes the signals' default actions again, the ``signals``
    /// sequences end, and the future completes once libuv has closed the handles. Closing twice is
    /// harmless. Callable from any thread; on a loop that was closed, fails with
    /// `EventLoopError.closed`.
    ///
    /// ```swift
    /// watcher.close().onValue { print("signals restored") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        let closed = PendingResult<Void>()
        let run: @Sendable () -> Void = { [self] in
            // Closed once closing began and the last handle's close callback ran.
            closing.wait(closed)
            beginClosing()
        }
        if loop.isInLoopContext, !loop.isClosed {
            run()
        } else if loop.isClosed {
            // The main loop, closed, on the main thread: its handles went with it, as below.
            signalStreams.finish()
            releaseHandlesOfClosedLoop()
            closed.fail(EventLoopError.closed)
        } else {
            do {
                try loop.submit(run)
            } catch {
                signalStreams.finish()
                releaseHandlesOfClosedLoop()
                closed.fail(error)
            }
        }
        return closed.future()
    }

    private func beginClosing() {
        guard closing.beginClosing() else { return }
        signalStreams.finish()
        if openHandleCount == 0 { didClose() }
        for handle in handles {
            loop.forgetHandle(handle)
            uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
                let watcher = Owner.release(handle?.pointee.data, as: SignalWatcher.self)
                handle?.deallocate()
                watcher.openHandleCount -= 1
                if watcher.openHandleCount == 0 { watcher.didClose() }
            }
        }
        handles = []
        loop.libuvStateDidChange()
    }

    /// Frees the handles of a watcher whose loop was closed first. Closing the loop closed them without
    /// telling this watcher; libuv holds no pointer to them any more, so their memory and the
    /// references they held on the watcher are given back here. Runs once: the loop runs nothing now.
    private func releaseHandlesOfClosedLoop() {
        guard loop.isClosed else { return }
        let orphans = handles
        handles = []
        _ = closing.beginClosing()
        for handle in orphans {
            _ = Owner.release(handle.pointee.data, as: SignalWatcher.self)
            handle.deallocate()
        }
        openHandleCount = 0
        handler = nil
    }

    private func didClose() {
        handler = nil
        closing.didClose()
    }
}
