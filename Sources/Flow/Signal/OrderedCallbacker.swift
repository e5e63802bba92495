/// Callbacks called one after the other in an order you choose, each waiting for the future the
/// previous one returned.
///
/// ```swift
/// let willQuit = OrderedCallbacker<Int, String>()
/// bag += willQuit.addCallback({ reason in saveDocuments() }, orderedBy: 1)   // returns a Future<Void>
/// bag += willQuit.addCallback({ reason in print(reason) }, orderedBy: 2)
/// willQuit.callAll(with: "update").onValue { quit() }
/// ```
public final class OrderedCallbacker<OrderedValue: Sendable, CallbackValue: Sendable>: Sendable {
    private struct Entry {
        let key: Int
        let order: OrderedValue
        let callback: @Sendable (CallbackValue) -> Future<Void>
    }

    private struct State {
        var entries: [Entry] = []
        var nextKey = 0
    }

    private let state = Locked(State())

    /// Creates an ordered callbacker with no callbacks.
    public init() {}

    /// Whether no callback is registered.
    public var isEmpty: Bool { state.withLock { $0.entries.isEmpty } }

    /// Registers `callback` at the place `orderedValue` gives it; the next callback waits for the
    /// future it returns.
    ///
    /// - Returns: a disposable that unregisters the callback.
    @preconcurrency
    public func addCallback(
        _ callback: @escaping @Sendable (CallbackValue) -> Future<Void>, orderedBy orderedValue: OrderedValue
    ) -> Disposable {
        let key = state.withLock { state -> Int in
            let key = state.nextKey
            state.nextKey += 1
            state.entries.append(Entry(key: key, order: orderedValue, callback: callback))
            return key
        }
        return Disposer { [weak self] in
            let removed = self?.state.withLock { state -> Entry? in
                guard let index = state.entries.firstIndex(where: { $0.key == key }) else { return nil }
                return state.entries.remove(at: index)
            }
            _ = removed
        }
    }

    /// Registers `callback` at the place `orderedValue` gives it.
    ///
    /// - Returns: a disposable that unregisters the callback.
    @preconcurrency
    public func addCallback(
        _ callback: @escaping @Sendable (CallbackValue) -> Void, orderedBy orderedValue: OrderedValue
    ) -> Disposable {
        addCallback({ value -> Future<Void> in
            callback(value)
            return Future()
        }, orderedBy: orderedValue)
    }

    /// Calls every callback with `value`, in the order `isOrderedBefore` gives, each after the future
    /// of the one before has completed.
    ///
    /// - Returns: a future that completes once every callback's future has.
    @preconcurrency
    @discardableResult
    public func callAll(
        with value: CallbackValue, isOrderedBefore: (OrderedValue, OrderedValue) -> Bool
    ) -> Future<Void> {
        let entries = state.withLock { $0.entries }
        let callbacks = entries.sorted { isOrderedBefore($0.order, $1.order) }.map(\.callback)
        return callbacks.mapToFuture { callback in callback(value) }.toVoid()
    }
}

extension OrderedCallbacker where OrderedValue: Comparable {
    /// Calls every callback with `value`, lowest `orderedBy` first, each after the future of the one
    /// before has completed.
    ///
    /// - Returns: a future that completes once every callback's future has.
    @discardableResult
    public func callAll(with value: CallbackValue) -> Future<Void> {
        callAll(with: value, isOrderedBefore: <)
    }
}
