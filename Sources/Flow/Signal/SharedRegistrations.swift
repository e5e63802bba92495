/// Lets overlapping listeners share one registration upstream: the first listener registers, later
/// ones join it, and the upstream registration is disposed when the last one leaves. A later
/// listener of a readable signal gets the last value seen as its `.initial`.
///
/// Used by ``SignalOptions/shared`` and ``SignalProvider/shared()``.
@usableFromInline
final class SharedRegistrations<Kind: SignalKind, Value: Sendable>: Sendable {
    @usableFromInline
    typealias Callback = @Sendable (EventType<Value>) -> Void

    private struct Listener {
        let key: Int
        let callback: Callback
    }

    private struct State {
        var listeners: [Listener] = []
        var nextKey = 0
        var upstream: Disposable?
        /// The key of the listener that started the upstream registration: it alone gets its `.initial`.
        var starterKey: Int?
        var lastValue: Value?
        /// Bumped each time an upstream registration starts, so that a late clean-up of an old one
        /// does not touch the next.
        var generation = 0
    }

    private let state = Locked(State())
    private let register: @Sendable (@escaping Callback) -> Disposable

    @usableFromInline
    init(register: @escaping @Sendable (@escaping Callback) -> Disposable) {
        self.register = register
    }

    @usableFromInline
    func add(_ callback: @escaping Callback) -> Disposable {
        let (key, isStarter, generation, last) = state.withLock { state -> (Int, Bool, Int, Value?) in
            let key = state.nextKey
            state.nextKey += 1
            if state.starterKey == nil, state.listeners.isEmpty {
                state.generation += 1
                state.starterKey = key
                state.listeners.append(Listener(key: key, callback: callback))
                return (key, true, state.generation, nil)
            }
            return (key, false, state.generation, state.lastValue)
        }
        if isStarter {
            let upstream = register { [self] eventType in broadcast(eventType, generation: generation) }
            let stale = state.withLock { state -> Disposable? in
                guard state.generation == generation, !state.listeners.isEmpty else { return upstream }
                state.upstream = upstream
                return nil
            }
            stale?.dispose()
        } else if Kind.isReadable && last == nil {
            // The shared registration has not seen a current value yet (it is starting on another
            // thread): this listener registers on its own, which gives it one.
            return register(callback)
        } else {
            // The late listener's `.initial` first, then it joins the broadcast.
            callback(.initial(Kind.isReadable ? last : nil))
            state.withLock { $0.listeners.append(Listener(key: key, callback: callback)) }
        }
        return SharedListenerRemoval(owner: self, key: key)
    }

    private func broadcast(_ eventType: EventType<Value>, generation: Int) {
        let listeners = state.withLock { state -> [Listener] in
            guard state.generation == generation else { return [] }
            if Kind.isReadable, let value = eventType.value { state.lastValue = value }
            if case .initial = eventType {
                return state.listeners.filter { $0.key == state.starterKey }
            }
            return state.listeners
        }
        for listener in listeners {
            listener.callback(eventType)
        }
        if eventType.isEnd {
            // Everyone got the end: the next listener starts afresh.
            let upstream = state.withLock { state -> (Disposable?, [Listener]) in
                guard state.generation == generation else { return (nil, []) }
                let taken = (state.upstream, state.listeners)
                state.upstream = nil
                state.listeners = []
                state.starterKey = nil
                state.lastValue = nil
                state.generation += 1
                return taken
            }
            upstream.0?.dispose()
        }
    }

    fileprivate func remove(key: Int) {
        let released = state.withLock { state -> (Disposable?, Listener?) in
            guard let index = state.listeners.firstIndex(where: { $0.key == key }) else { return (nil, nil) }
            let listener = state.listeners.remove(at: index)
            guard state.listeners.isEmpty else { return (nil, listener) }
            let upstream = state.upstream
            state.upstream = nil
            state.starterKey = nil
            state.lastValue = nil
            state.generation += 1
            return (upstream, listener)
        }
        released.0?.dispose()
    }
}

/// Removes one listener from a ``SharedRegistrations``, once.
private final class SharedListenerRemoval<Kind: SignalKind, Value: Sendable>: Disposable, Sendable {
    private let owner: Locked<SharedRegistrations<Kind, Value>?>
    private let key: Int

    init(owner: SharedRegistrations<Kind, Value>, key: Int) {
        self.owner = Locked(owner)
        self.key = key
    }

    func dispose() {
        let owner = self.owner.withLock { owner in
            defer { owner = nil }
            return owner
        }
        owner?.remove(key: key)
    }
}
