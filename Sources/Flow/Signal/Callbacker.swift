/// A list of callbacks to call with each value: the usual way to produce a signal's values.
///
/// Thread-safe: callbacks may be added, removed and called from any thread. Callbacks are called in
/// the order they were added, outside the callbacker's lock.
///
/// ```swift
/// let callbacker = Callbacker<Bool>()
/// bag += callbacker.addCallback { isEnabled in print(isEnabled) }
/// callbacker.callAll(true)                       // prints "true"
/// let isEnabled = Signal(callbacker: callbacker) // the same values, as a signal
/// ```
public final class Callbacker<Value: Sendable>: Sendable {
    @usableFromInline
    typealias Callback = @Sendable (Value) -> Void

    /// One callback is most of the traffic: it is kept without an array. Several are kept in the
    /// order added (so by increasing key); a removed one leaves a hole, found by binary search, until
    /// holes are half the array, which is then compacted: removal stays cheap with many callbacks.
    @usableFromInline
    enum Callbacks: Sendable {
        case none
        case single(key: Int, callback: Callback)
        case multiple(ContiguousArray<(key: Int, callback: Callback?)>)
    }

    @usableFromInline
    struct State: Sendable {
        @usableFromInline var callbacks = Callbacks.none
        @usableFromInline var nextKey = 0
        /// The holes in `.multiple`.
        @usableFromInline var removedCount = 0

        @inlinable
        init() {}
    }

    @usableFromInline
    let state = Locked(State())

    /// Creates a callbacker with no callbacks.
    public init() {}

    /// Whether no callback is registered.
    public var isEmpty: Bool {
        state.withLock { state in
            switch state.callbacks {
            case .none: return true
            case .single: return false
            case .multiple(let callbacks): return callbacks.count == state.removedCount
            }
        }
    }

    /// Registers `callback` to be called by every later ``callAll(with:)``.
    ///
    /// - Returns: a disposable that unregisters the callback (and lets go of it).
    @preconcurrency @inlinable
    public func addCallback(_ callback: @escaping @Sendable (Value) -> Void) -> Disposable {
        let key = state.withLock { state -> Int in
            let key = state.nextKey
            state.nextKey += 1
            switch state.callbacks {
            case .none:
                state.callbacks = .single(key: key, callback: callback)
            case .single(let singleKey, let single):
                state.callbacks = .multiple([(singleKey, single), (key, callback)])
            case .multiple(var callbacks):
                state.callbacks = .none  // so that the append below does not copy the array
                callbacks.append((key, callback))
                state.callbacks = .multiple(callbacks)
            }
            return key
        }
        return CallbackRemoval(callbacker: self, key: key)
    }

    /// Calls every registered callback with `value`, in the order they were added.
    @inlinable
    public func callAll(with value: Value) {
        let callbacks = state.withLock { $0.callbacks }
        switch callbacks {
        case .none:
            break
        case .single(_, let callback):
            callback(value)
        case .multiple(let callbacks):
            for entry in callbacks { entry.callback?(value) }
        }
    }

    /// Calls every registered callback with `value`: the spelling of Flow's Signals guide.
    ///
    /// ```swift
    /// callbacker.callAll(true)
    /// ```
    @inlinable
    public func callAll(_ value: Value) {
        callAll(with: value)
    }

    @usableFromInline
    func removeCallback(forKey key: Int) {
        let removed = state.withLock { state -> Callback? in
            switch state.callbacks {
            case .single(let singleKey, let callback) where singleKey == key:
                state.callbacks = .none
                return callback
            case .none, .single:
                return nil
            case .multiple(var callbacks):
                state.callbacks = .none  // so that the changes below do not copy the array
                var low = 0
                var high = callbacks.count
                while low < high {
                    let middle = (low + high) / 2
                    if callbacks[middle].key < key { low = middle + 1 } else { high = middle }
                }
                var removed: Callback?
                if low < callbacks.count, callbacks[low].key == key {
                    removed = callbacks[low].callback
                    callbacks[low].callback = nil
                    if removed != nil { state.removedCount += 1 }
                }
                if state.removedCount * 2 > callbacks.count {
                    callbacks.removeAll { $0.callback == nil }
                    state.removedCount = 0
                }
                state.callbacks = callbacks.isEmpty ? .none : .multiple(callbacks)
                return removed
            }
        }
        _ = removed  // the removed callback is released here, outside the lock
    }
}

extension Callbacker where Value == Void {
    /// Calls every registered callback.
    @inlinable
    public func callAll() {
        callAll(with: ())
    }
}

extension Callbacker: SignalProvider {
    /// A signal of the values passed to ``callAll(with:)``.
    public var providedSignal: Signal<Value> { Signal(callbacker: self) }
}

/// Unregisters one callback of a ``Callbacker``, once.
// @unchecked Sendable: `callbacker` is read and cleared under `lock`.
@usableFromInline
final class CallbackRemoval<Value: Sendable>: Disposable, @unchecked Sendable {
    @usableFromInline let lock = FutureLock()
    @usableFromInline @exclusivity(unchecked) var callbacker: Callbacker<Value>?
    @usableFromInline let key: Int

    @inlinable
    init(callbacker: Callbacker<Value>, key: Int) {
        self.callbacker = callbacker
        self.key = key
    }

    @usableFromInline
    func dispose() {
        let callbacker = lock.withLock { () -> Callbacker<Value>? in
            defer { self.callbacker = nil }
            return self.callbacker
        }
        callbacker?.removeCallback(forKey: key)
    }
}
