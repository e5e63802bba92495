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
final class EventGate<Value: Sendable>: @unchecked Sendable {
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
    /// The thread running the owner's clean-up, while it runs: an event it sends is a misuse.
    @usableFromInline @exclusivity(unchecked) var cleanUpThread: pthread_t?
    /// Run once `.end` has been delivered.
    @usableFromInline let onEnd: (@Sendable () -> Void)?

    @inlinable
    init(
        getValue: (@Sendable () -> Value)? = nil, onEnd: (@Sendable () -> Void)? = nil,
        downstream: @escaping Callback
    ) {
        self.getValue = getValue
        self.onEnd = onEnd
        self.downstream = downstream
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
            if event.isEnd {
                close()
                onEnd?()
            }
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
            fatalError(
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

    /// Runs `cleanUp` (the producer's disposable) after closing, noting the thread so that an event
    /// the clean-up sends back gets a clear message instead of vanishing.
    @usableFromInline
    func closeRunning(cleanUp: Disposable?) {
        close()
        guard let cleanUp else { return }
        lock.withLock { cleanUpThread = pthread_self() }
        cleanUp.dispose()
        lock.withLock { cleanUpThread = nil }
    }
}

/// One listener registration on a producer (`Signal { callback in ... }` and its kin): the producer
/// runs for it, its events go through an ``EventGate``, and its clean-up runs on dispose or end.
// @unchecked Sendable: `producerDisposable` and `isDisposed` are guarded by `lock`; `gate` is set
// before the registration is shared.
@usableFromInline
final class ProducerRegistration<Value: Sendable>: Disposable, @unchecked Sendable {
    @usableFromInline let lock = FutureLock()
    @usableFromInline var gate: EventGate<Value>?
    @usableFromInline var producerDisposable: Disposable?
    @usableFromInline var isDisposed = false

    @inlinable
    init() {}

    /// Starts the producer for one registration: returns what disposes of it.
    @inlinable
    static func start(
        getValue: (@Sendable () -> Value)?,
        producer: @Sendable (@escaping @Sendable (Event<Value>) -> Void) -> Disposable,
        downstream: @escaping EventGate<Value>.Callback
    ) -> Disposable {
        let registration = ProducerRegistration()
        let gate = EventGate(getValue: getValue, onEnd: { [weak registration] in registration?.dispose() }, downstream: downstream)
        registration.gate = gate
        let disposable = producer { event in gate.send(.event(event)) }
        if registration.attach(disposable) {
            gate.sendInitialIfNeeded()
        }
        return registration
    }

    /// Keeps the producer's disposable, or disposes it at once if the registration already ended.
    ///
    /// - Returns: whether the registration is still live.
    @usableFromInline
    func attach(_ disposable: Disposable) -> Bool {
        let isAlreadyDisposed = lock.withLock { () -> Bool in
            if isDisposed { return true }
            producerDisposable = disposable
            return false
        }
        if isAlreadyDisposed { disposable.dispose() }
        return !isAlreadyDisposed
    }

    @usableFromInline
    func dispose() {
        let disposable = lock.withLock { () -> Disposable?? in
            if isDisposed { return .none }
            isDisposed = true
            let taken = producerDisposable
            producerDisposable = nil
            return .some(taken)
        }
        guard case .some(let cleanUp) = disposable else { return }
        gate?.closeRunning(cleanUp: cleanUp)
    }
}
