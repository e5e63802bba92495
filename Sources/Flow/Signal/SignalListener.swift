import Synchronization

/// One listener: receives a registration's events and runs the listener's callback on its scheduler.
///
/// Events reach it one at a time (every signal is serial), so handing each to the scheduler keeps
/// their order. The `.initial` is delivered at once, wherever it comes from: `atOnce()` and reading
/// a current value rely on it. A disposed listener runs nothing more, including events already handed
/// to its scheduler: disposing on the delivering scheduler means no callback after `dispose()`.
/// Once it has delivered the end it lets go of its callback, and so of what the listener's closure
/// captured, as Flow does, even while the caller keeps the returned disposable.
///
/// Inlinable, like ``EventGate``, so that the delivery path is specialised where it is used.
// @unchecked Sendable: `upstream` and `callback` are guarded by `lock` (`callback` is read under it
// because a concurrent scheduler may run two hopped deliveries at once, one of them the end's, which
// replaces it); `isActive` is atomic; the rest is immutable.
@usableFromInline
final class SignalListener<Value: Sendable>: @unchecked Sendable {
    @usableFromInline
    typealias Callback = @Sendable (EventType<Value>) -> Void

    @usableFromInline let scheduler: Scheduler
    @usableFromInline @exclusivity(unchecked) var callback: Callback
    @usableFromInline let isActive = Atomic<Bool>(true)
    @usableFromInline let lock = FutureLock()
    @usableFromInline @exclusivity(unchecked) var upstream: Disposable?

    @inlinable
    init(scheduler: Scheduler, callback: @escaping Callback) {
        self.scheduler = scheduler
        self.callback = callback
    }

    /// Registers a listener on `signal`; the returned handle stops it when disposed or released.
    @inlinable
    static func listen<Kind>(
        to signal: CoreSignal<Kind, Value>, on scheduler: Scheduler, _ callback: @escaping Callback
    ) -> Disposable {
        let listener = SignalListener(scheduler: scheduler, callback: callback)
        listener.attach(signal.register { [listener] eventType in listener.receive(eventType) })
        return ListenerHandle(listener)
    }

    /// Keeps the upstream registration, or disposes it at once if the listener already stopped (an
    /// end delivered while registering).
    @usableFromInline
    func attach(_ upstream: Disposable) {
        let isStillActive = lock.withLock { () -> Bool in
            guard isActive.load(ordering: .acquiring) else { return false }
            self.upstream = upstream
            return true
        }
        if !isStillActive { upstream.dispose() }
    }

    @inlinable
    func receive(_ eventType: EventType<Value>) {
        guard isActive.load(ordering: .acquiring) else { return }
        if case .initial = eventType {
            currentCallback()(eventType)
        } else if scheduler.isImmediate {
            deliver(eventType)
        } else {
            scheduler.async { [self] in
                guard isActive.load(ordering: .acquiring) else { return }
                deliver(eventType)
            }
        }
    }

    @inlinable
    func deliver(_ eventType: EventType<Value>) {
        currentCallback()(eventType)
        if eventType.isEnd {
            dispose()
            // Nothing is delivered after the end: its captures go now, not with the caller's handle
            // (released after the lock, since they may deinitialise anything).
            let released = lock.withLock { () -> Callback in
                defer { callback = { _ in } }
                return callback
            }
            _ = released
        }
    }

    @inlinable
    func currentCallback() -> Callback {
        lock.lock()
        defer { lock.unlock() }
        return callback
    }

    @usableFromInline
    func dispose() {
        guard isActive.exchange(false, ordering: .acquiringAndReleasing) else { return }
        let upstream = lock.withLock { () -> Disposable? in
            defer { self.upstream = nil }
            return self.upstream
        }
        upstream?.dispose()
    }
}

/// What a listener call returns: disposing it, or letting go of it, stops the listener. Once disposed
/// it holds nothing, so the listener's closures are released even while the handle is kept.
// @unchecked Sendable: `listener` is read and cleared under `lock`.
@usableFromInline
final class ListenerHandle<Value: Sendable>: Disposable, @unchecked Sendable {
    @usableFromInline let lock = FutureLock()
    @usableFromInline @exclusivity(unchecked) var listener: SignalListener<Value>?

    @inlinable
    init(_ listener: SignalListener<Value>) { self.listener = listener }

    @usableFromInline
    func dispose() {
        let listener = lock.withLock { () -> SignalListener<Value>? in
            defer { self.listener = nil }
            return self.listener
        }
        listener?.dispose()
    }

    deinit { dispose() }
}

extension CoreSignal {
    /// Registers `callback` to run on `scheduler` (at once for ``Scheduler/none``).
    @inlinable
    func listen(on scheduler: Scheduler, _ callback: @escaping Callback) -> Disposable {
        SignalListener.listen(to: self, on: scheduler, callback)
    }

    /// Registers a transform's `callback` to run on `scheduler`: as ``listen(on:_:)``, but directly
    /// on the registration for ``Scheduler/none``, where there is nothing to hop (the outermost
    /// listener owns the registration's lifetime).
    @inlinable
    func observe(on scheduler: Scheduler, _ callback: @escaping Callback) -> Disposable {
        if scheduler === Scheduler.none { return register(callback) }
        return SignalListener.listen(to: self, on: scheduler, callback)
    }
}
