import CLibUV
import Flow
import Synchronization

/// The close-once state of an object that owns libuv handles: whether closing has begun, whether
/// libuv has finished closing, and the futures ``close(on:beginClosing:)`` handed out meanwhile.
///
/// Loop context only, like the handles it describes.
package final class HandleClosing: @unchecked Sendable {
    // @unchecked Sendable: every member is used only in the owner's loop context (`close(on:...)`
    // hops there; the owner's other methods run on the loop too).

    /// Whether closing has not begun.
    package private(set) var isOpen = true
    /// Whether libuv has closed the handles (``didClose()`` ran).
    package private(set) var isClosed = false
    private var waiters: [PendingResult<Void>] = []
    /// Told once the handles are closed (a listener's count of its open connections).
    private var closeObservers: [() -> Void] = []

    package init() {}

    /// A future completed once the handles are closed: hops to `loop`, queues the future (or completes
    /// it at once if already closed), then runs `beginClosing`, which should call ``beginClosing()``
    /// and start closing only if that returns `true`. Callable from any thread.
    package func close(
        on loop: EventLoop, caller: @autoclosure () -> String = "close()", beginClosing: @escaping @Sendable () -> Void
    ) -> Future<Void> {
        let closed = PendingResult<Void>()
        loop.inContext(caller()) { [self] in
            wait(closed)
            beginClosing()
        }
        return closed.future()
    }

    /// Completes `waiter` once the handles are closed: at once if they already are.
    package func wait(_ waiter: PendingResult<Void>) {
        if isClosed {
            waiter.succeed(())
        } else {
            waiters.append(waiter)
        }
    }

    /// Marks closing as begun; `false` if it already had, so that the handles are closed once.
    package func beginClosing() -> Bool {
        guard isOpen else { return false }
        isOpen = false
        return true
    }

    /// Closes `handle` (any `uv_handle_t`-based structure on `loop`) once: unless closing has begun,
    /// marks it begun, forgets the handle's name among the loop's active resources and asks libuv to
    /// close it. `closed` is libuv's close callback: it takes back the owner's reference from the
    /// handle's `data` field (see `Owner`) and runs the owner's close, which frees the handle and ends
    /// with ``didClose()``. Returns whether closing began now. Loop context only.
    @discardableResult
    package func closeHandle(_ handle: UnsafeMutableRawPointer, on loop: EventLoop, closed: uv_close_cb) -> Bool {
        guard beginClosing() else { return false }
        loop.forgetHandle(handle)
        uv_close(handle.assumingMemoryBound(to: uv_handle_t.self), closed)
        loop.libuvStateDidChange()
        return true
    }

    /// Marks the handles closed and completes every waiting future.
    package func didClose() {
        isClosed = true
        // Taken out first: a waiter's callbacks may call `close()` again.
        let waiting = waiters
        waiters = []
        for waiter in waiting { waiter.succeed(()) }
        let observers = closeObservers
        closeObservers = []
        for observer in observers { observer() }
    }

    /// Runs `observer` in the loop's context once the handles are closed (at once if they are).
    package func whenClosed(_ observer: @escaping () -> Void) {
        if isClosed { observer() } else { closeObservers.append(observer) }
    }
}

/// The `AsyncStream` continuations of every sequence handed out by an object that delivers values
/// (datagrams, changes, signals) until it closes. Callable from any thread.
package final class ContinuationFanOut<Element: Sendable>: Sendable {
    private struct State {
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextIdentifier = 0
        var isFinished = false
    }

    private let state = Locked(State())

    package init() {}

    /// A new sequence of the values yielded from now on, keeping the newest `limit` a slow consumer has
    /// not taken yet. After ``finish()`` the sequence is already finished and `isLive` is `false`.
    package func makeStream(bufferingNewest limit: Int) -> (stream: AsyncStream<Element>, isLive: Bool) {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(limit))
        let identifier = state.withLock { state -> Int? in
            guard !state.isFinished else { return nil }
            let identifier = state.nextIdentifier
            state.nextIdentifier += 1
            state.continuations[identifier] = continuation
            return identifier
        }
        guard let identifier else {
            continuation.finish()
            return (stream, false)
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: identifier) }
        }
        return (stream, true)
    }

    /// Hands `element` to every live sequence (outside the lock: a consumer's code may run).
    package func yield(_ element: Element) {
        let current = state.withLock { Array($0.continuations.values) }
        for continuation in current { continuation.yield(element) }
    }

    /// Ends every sequence, and makes later ones end at once.
    package func finish() {
        let ending = state.withLock { state -> [AsyncStream<Element>.Continuation] in
            state.isFinished = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in ending { continuation.finish() }
    }
}
