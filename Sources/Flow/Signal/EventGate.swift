#if canImport(Glibc)
import Glibc
#endif

/// Hands events to one downstream callback one at a time: what makes every signal serial.
///
/// An event sent while another is being delivered (from another thread, or from inside the
/// downstream callback itself) is queued and delivered by the thread already delivering, once the
/// current callback has returned: so sending from a callback never recurses, and two threads never
/// run the callback at once. It also delivers `.initial` first (asking `getValue` for it if an event
/// comes before the `.initial`), drops a second `.initial` and everything after `.end`, and lets go
/// of the callback when closed.
///
/// Two lock round trips per event when nothing is queued; no allocation unless events pile up. The
/// sending path is inlinable so that it is specialised for the value type where it is used (a
/// benchmark showed the generic version spending half its time looking up type metadata).
// @unchecked Sendable: every stored property is read and written under `lock`, except `onEnd`, which
// is immutable. The lock also makes the accesses exclusive, hence `@exclusivity(unchecked)`: the
// dynamic check cost a third of the delivery time in P12.
@usableFromInline
final class EventGate<Value: Sendable>: Disposable, @unchecked Sendable {
    @usableFromInline
    typealias Callback = @Sendable (EventType<Value>) -> Void

    @usableFromInline let lock = FutureLock()
    @usableFromInline @exclusivity(unchecked) var downstream: Callback?
    @usableFromInline @exclusivity(unchecked) var getValue: (@Sendable () -> Value)?
    @usableFromInline @exclusivity(unchecked) var needsInitial = true
    @usableFromInline @exclusivity(unchecked) var hasEnded = false
    @usableFromInline @exclusivity(unchecked) var isDelivering = false
    @usableFromInline @exclusivity(unchecked) var pending: [EventType<Value>] = []
    @usableFromInline @exclusivity(unchecked) var pendingHead = 0
    /// The thread running the producer's clean-up, while it runs: an event it sends is a misuse.
    @usableFromInline @exclusivity(unchecked) var cleanUpThread: pthread_t?
    /// The clean-up of the producer feeding this gate, if any: run on dispose or after the end.
    @usableFromInline @exclusivity(unchecked) var producerDisposable: Disposable?
    @usableFromInline @exclusivity(unchecked) var isDisposed = false

    @inlinable
    init(getValue: (@Sendable () -> Value)? = nil, downstream: @escaping Callback) {
        self.getValue = getValue
        self.downstream = downstream
    }

    /// Starts `producer` for one registration (`Signal { callback in ... }` and its kin): its events
    /// go through a new gate, whose disposal (or the end) runs the producer's clean-up.
    ///
    /// - Returns: the gate, as what disposes of the registration.
    @inlinable
    static func start(
        getValue: (@Sendable () -> Value)?,
        producer: @Sendable (@escaping @Sendable (Event<Value>) -> Void) -> Disposable,
        downstream: @escaping Callback
    ) -> Disposable {
        let gate = EventGate(getValue: getValue, downstream: downstream)
        gate.attach(producer { [gate] event in gate.send(.event(event)) })
        return gate
    }

    /// Keeps the producer's clean-up, or runs it at once if the registration already ended; then
    /// delivers the `.initial` if the producer did not signal while starting.
    @usableFromInline
    func attach(_ disposable: Disposable) {
        let isAlreadyDisposed = lock.withLock { () -> Bool in
            if isDisposed { return true }
            producerDisposable = disposable
            return false
        }
        if isAlreadyDisposed {
            disposable.dispose()
        } else {
            sendInitialIfNeeded()
        }
    }

    /// Delivers `event` now, or queues it behind the event being delivered.
    @inlinable
    func send(_ event: EventType<Value>) {
        lock.lock()
        guard downstream != nil, !hasEnded else {
            lock.unlock()
            checkNotInsideCleanUp(event)
            return
        }
        if case .initial = event {
            guard needsInitial else {
                lock.unlock()
                return
            }
            needsInitial = false
        } else if event.isEnd {
            hasEnded = true
        }
        if isDelivering {
            pending.append(event)
            lock.unlock()
            return
        }
        isDelivering = true
        lock.unlock()
        drain(first: event)
    }

    /// Delivers the `.initial` now (from `getValue`) unless one was delivered or is on its way.
    @inlinable
    func sendInitialIfNeeded() {
        lock.lock()
        guard needsInitial, downstream != nil, !isDelivering else {
            lock.unlock()
            return
        }
        isDelivering = true
        lock.unlock()
        drain(first: nil)
    }

    @inlinable
    func drain(first: EventType<Value>?) {
        var next = first
        while true {
            lock.lock()
            guard let downstream else {
                isDelivering = false
                let dropped = takePending()
                lock.unlock()
                _ = dropped
                return
            }
            if needsInitial {
                // An event came before the `.initial` (a producer that signals while it starts): the
                // `.initial` goes first.
                needsInitial = false
                let getValue = self.getValue
                lock.unlock()
                downstream(.initial(getValue?()))
                continue
            }
            if next == nil {
                guard pendingHead < pending.count else {
                    isDelivering = false
                    if !pending.isEmpty { pending.removeAll(keepingCapacity: true) }
                    pendingHead = 0
                    lock.unlock()
                    return
                }
                next = pending[pendingHead]
                pendingHead += 1
            }
            lock.unlock()
            let event = next.unsafelyUnwrapped
            next = nil
            downstream(event)
            if event.isEnd { dispose() }
        }
    }

    @inlinable
    func takePending() -> [EventType<Value>] {
        let taken = pending
        pending = []
        pendingHead = 0
        return taken
    }

    /// Stops the program if `event` is a value sent back by the clean-up running on this thread.
    @usableFromInline
    func checkNotInsideCleanUp(_ event: EventType<Value>) {
        guard case .event(.value) = event else { return }
        let isInside = lock.withLock { cleanUpThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if isInside {
            misuseFailure(
                "Signal: a value was sent from inside the signal's own clean-up (the Disposable its producer "
                    + "returned); no listener is left to receive it. Stop sending before returning the Disposable.")
        }
    }

    /// Stops delivering and lets go of the callback (outside the lock: releasing it may run deinits).
    @usableFromInline
    func close() {
        lock.lock()
        let released = (downstream, getValue, takePending())
        downstream = nil
        getValue = nil
        lock.unlock()
        _ = released
    }

    /// Stops delivering, lets go of the callback and runs the producer's clean-up, once; the thread
    /// is noted meanwhile, so that an event the clean-up sends back gets a clear message instead of
    /// vanishing.
    @usableFromInline
    func dispose() {
        let cleanUp = lock.withLock { () -> Disposable?? in
            if isDisposed { return .none }
            isDisposed = true
            let taken = producerDisposable
            producerDisposable = nil
            if taken != nil { cleanUpThread = pthread_self() }
            return .some(taken)
        }
        guard case .some(let producerCleanUp) = cleanUp else { return }
        close()
        guard let producerCleanUp else { return }
        producerCleanUp.dispose()
        lock.withLock { cleanUpThread = nil }
    }
}
