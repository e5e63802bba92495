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
/// Two lock round trips per event when nothing is queued; no allocation unless events pile up.
// @unchecked Sendable: every stored property is read and written under `lock`, except `onEnd` and
// `getValue`'s first value, which are set before the gate is shared.
final class EventGate<Value: Sendable>: @unchecked Sendable {
    typealias Callback = @Sendable (EventType<Value>) -> Void

    private let lock = FutureLock()
    private var downstream: Callback?
    private var getValue: (@Sendable () -> Value)?
    private var needsInitial = true
    private var hasEnded = false
    private var isDelivering = false
    private var pending: [EventType<Value>] = []
    private var pendingHead = 0
    /// The thread running the owner's clean-up, while it runs: an event it sends is a misuse.
    private var cleanUpThread: pthread_t?
    /// Run once `.end` has been delivered (or dropped because the gate closed meanwhile).
    private let onEnd: (@Sendable () -> Void)?

    init(
        getValue: (@Sendable () -> Value)? = nil, onEnd: (@Sendable () -> Void)? = nil,
        downstream: @escaping Callback
    ) {
        self.getValue = getValue
        self.onEnd = onEnd
        self.downstream = downstream
    }

    /// Whether the gate still delivers: not closed, not ended.
    var isOpen: Bool { lock.withLock { downstream != nil && !hasEnded } }

    /// Delivers `event` now, or queues it behind the event being delivered.
    func send(_ event: EventType<Value>) {
        lock.lock()
        guard downstream != nil, !hasEnded else {
            let isMisuse = isInsideCleanUp(event)
            lock.unlock()
            if isMisuse {
                fatalError(
                    "Signal: a value was sent from inside the signal's own clean-up (the Disposable its producer "
                        + "returned); no listener is left to receive it. Stop sending before returning the Disposable.")
            }
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

    private func drain(first: EventType<Value>?) {
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
            if needsInitial, next.map({ if case .initial = $0 { false } else { true } }) ?? true {
                // An event came before the `.initial`: the `.initial` goes first.
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
            let event = next!
            next = nil
            downstream(event)
            if event.isEnd {
                close()
                onEnd?()
            }
        }
    }

    private func takePending() -> [EventType<Value>] {
        let taken = pending
        pending = []
        pendingHead = 0
        return taken
    }

    private func isInsideCleanUp(_ event: EventType<Value>) -> Bool {
        guard let cleanUpThread, case .event(.value) = event else { return false }
        return pthread_equal(cleanUpThread, pthread_self()) != 0
    }

    /// Stops delivering and lets go of the callback (outside the lock: releasing it may run deinits).
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
// @unchecked Sendable: `producerDisposable` and `isDisposed` are guarded by `lock`; the gate is Sendable.
final class ProducerRegistration<Value: Sendable>: Disposable, @unchecked Sendable {
    private let lock = FutureLock()
    private var gate: EventGate<Value>!
    private var producerDisposable: Disposable?
    private var isDisposed = false

    private init() {}

    /// Starts the producer for one registration: returns what disposes of it.
    static func start(
        getValue: (@Sendable () -> Value)?,
        producer: @Sendable (@escaping @Sendable (Event<Value>) -> Void) -> Disposable,
        downstream: @escaping EventGate<Value>.Callback
    ) -> Disposable {
        let registration = ProducerRegistration()
        let gate = EventGate(getValue: getValue, onEnd: { [weak registration] in registration?.dispose() }, downstream: downstream)
        registration.gate = gate
        let disposable = producer { event in gate.send(.event(event)) }
        let isAlreadyDisposed = registration.lock.withLock { () -> Bool in
            if registration.isDisposed { return true }
            registration.producerDisposable = disposable
            return false
        }
        if isAlreadyDisposed {
            disposable.dispose()
        } else {
            gate.sendInitialIfNeeded()
        }
        return registration
    }

    func dispose() {
        let disposable = lock.withLock { () -> Disposable?? in
            if isDisposed { return .none }
            isDisposed = true
            let taken = producerDisposable
            producerDisposable = nil
            return .some(taken)
        }
        guard case .some(let cleanUp) = disposable else { return }
        gate.closeRunning(cleanUp: cleanUp)
    }
}
