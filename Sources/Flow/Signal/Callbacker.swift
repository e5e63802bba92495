import Synchronization

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
///
/// Plain callbacks (``addCallback(_:)``) are called as Flow calls them: at once, on the calling thread,
/// so a `callAll` from inside a callback runs the callbacks again, nested. Once a signal listener
/// listens (`onValue` on `Signal(callbacker:)` or on a `ReadWriteSignal`), values are delivered one
/// at a time instead: a value sent
/// while another is being delivered (from another thread, or from a callback) waits until every
/// callback has had the current one, and is then delivered by the thread already delivering.
// @unchecked Sendable: every stored property is read and written under `lock`; the lock also makes the
// accesses exclusive, hence `@exclusivity(unchecked)` (the dynamic checks are a measurable part of a
// delivery).
public final class Callbacker<Value: Sendable>: @unchecked Sendable {
    @usableFromInline
    typealias Node = CallbackerNode<Value>

    @usableFromInline let lock = FutureLock()
    /// The callbacks in the order added. A removed one leaves a hole (`nil`) until holes are half the
    /// array, which is then compacted. Delivery reads a snapshot: the array is copied only when it is
    /// changed while a delivery holds it.
    @usableFromInline @exclusivity(unchecked) var nodes: ContiguousArray<Node?> = []
    @usableFromInline @exclusivity(unchecked) var holeCount = 0
    /// The signal listeners among `nodes`: while there is one, values are delivered one at a time.
    @usableFromInline @exclusivity(unchecked) var listenerCount = 0
    @usableFromInline @exclusivity(unchecked) var isDelivering = false
    /// Values waiting for the delivery in progress, each with the callbacks present when it was sent.
    @usableFromInline @exclusivity(unchecked) var pending: [(value: Value, nodes: ContiguousArray<Node?>)?] = []
    @usableFromInline @exclusivity(unchecked) var pendingHead = 0

    /// Creates a callbacker with no callbacks.
    public init() {}

    /// Whether no callback is registered.
    public var isEmpty: Bool {
        lock.withLock { nodes.count == holeCount }
    }

    /// Registers `callback` to be called by every later ``callAll(with:)``.
    ///
    /// - Returns: a disposable that unregisters the callback (and lets go of it); letting go of the
    ///   disposable unregisters it too, as in Flow, so keep it (a ``DisposeBag`` is the usual place).
    @preconcurrency @inlinable
    public func addCallback(_ callback: @escaping @Sendable (Value) -> Void) -> Disposable {
        let node = Node(callbacker: self, scheduler: nil, callback: callback)
        add(node)
        return CallbackerHandle(node)
    }

    /// Registers a signal listener: `callback` runs on `scheduler` with every later value, one value at
    /// a time. Letting go of the returned handle unregisters it, as disposing it does.
    @inlinable
    func addListener(on scheduler: Scheduler, _ callback: @escaping @Sendable (Value) -> Void) -> Disposable {
        let node = Node(callbacker: self, scheduler: scheduler, callback: callback)
        add(node)
        return CallbackerHandle(node)
    }

    @inlinable
    func add(_ node: Node) {
        lock.lock()
        node.index = UInt32(nodes.count)
        nodes.append(node)
        if node.scheduler != nil { listenerCount += 1 }
        lock.unlock()
    }

    /// Calls every registered callback with `value`, in the order they were added.
    @inlinable
    public func callAll(with value: Value) {
        lock.lock()
        let snapshot = nodes
        if listenerCount == 0 {
            lock.unlock()
            for case let node? in snapshot where node.isLive { node.callback(value) }
            return
        }
        if isDelivering {
            pending.append((value, snapshot))
            lock.unlock()
            return
        }
        isDelivering = true
        lock.unlock()
        deliverInTurn(first: value, to: snapshot)
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

    /// Delivers `first`, then the values queued meanwhile, until none is left.
    @inlinable
    func deliverInTurn(first: Value, to firstNodes: ContiguousArray<Node?>) {
        var value = first
        var snapshot = firstNodes
        while true {
            deliver(value, to: snapshot)
            lock.lock()
            guard pendingHead < pending.count, let next = pending[pendingHead].take() else {
                isDelivering = false
                if !pending.isEmpty { pending.removeAll(keepingCapacity: true) }  // holds only nils here
                pendingHead = 0
                lock.unlock()
                return
            }
            pendingHead += 1
            lock.unlock()
            (value, snapshot) = next
        }
    }

    /// Calls each live callback of `nodes` with `value`: at once for plain callbacks and for listeners
    /// whose scheduler is running this code, through their scheduler otherwise.
    ///
    /// The snapshot keeps every node alive, so the nodes are visited without retaining each: reference
    /// counting was half the cost of a delivery.
    @inlinable
    func deliver(_ value: Value, to nodes: ContiguousArray<Node?>) {
        let context = ThreadContext.current
        let current = context.currentScheduler
        nodes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            base.withMemoryRebound(to: Unmanaged<Node>?.self, capacity: buffer.count) { slots in
                for index in 0..<buffer.count {
                    guard let slot = slots[index] else { continue }
                    slot._withUnsafeGuaranteedRef { node in
                        deliver(value, to: node, current: current, context: context)
                    }
                }
            }
        }
    }

    @inlinable
    func deliver(_ value: Value, to node: Node, current: Scheduler?, context: ThreadContext) {
        guard node.isLive else { return }
        guard let scheduler = node.scheduler, scheduler !== current else {
            node.callback(value)
            return
        }
        if scheduler.identity == current?.identity || scheduler.isImmediate(in: context) {
            node.callback(value)
        } else {
            scheduler.async { [node] in
                if node.isLive { node.callback(value) }
            }
        }
    }

    /// Takes `node` out of the list (its callback is released outside the lock).
    @usableFromInline
    func remove(_ node: Node) {
        let removed = lock.withLock { () -> Node? in
            let index = Int(node.index)
            guard index < nodes.count, nodes[index] === node else { return nil }
            let removed = nodes[index]
            nodes[index] = nil
            holeCount += 1
            if node.scheduler != nil { listenerCount -= 1 }
            if holeCount * 2 > nodes.count { compact() }
            return removed
        }
        _ = removed
    }

    /// Drops the holes and renumbers the callbacks left (under `lock`; releases nothing).
    @usableFromInline
    func compact() {
        if holeCount == nodes.count {
            nodes = []
        } else {
            nodes.removeAll { $0 == nil }
            for index in nodes.indices { nodes[index].unsafelyUnwrapped.index = UInt32(index) }
        }
        holeCount = 0
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

/// One callback of a ``Callbacker``: its closure, the scheduler it runs on (none for a plain callback)
/// and whether it is still registered. The list holds it; what the caller holds is a
/// ``CallbackerHandle``, whose release unregisters it.
///
/// Delivery reads `callback` and `scheduler` (immutable) and checks `isLive` (atomic) right before each
/// call: a node disposed on the delivering thread gets nothing more.
// @unchecked Sendable: `index` is read and written under the callbacker's lock; `liveness` is atomic;
// `callbacker` is a weak reference written once, at initialisation; the rest is immutable.
@usableFromInline
final class CallbackerNode<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let callback: @Sendable (Value) -> Void
    @usableFromInline let scheduler: Scheduler?
    /// Weak, so that a callback nobody disposes does not keep its callbacker alive through the list.
    @usableFromInline weak var callbacker: Callbacker<Value>?
    /// The position in the callbacker's list: guarded by the callbacker's lock.
    @usableFromInline @exclusivity(unchecked) var index: UInt32 = 0
    @usableFromInline let liveness = Atomic<Bool>(true)

    @inlinable
    init(callbacker: Callbacker<Value>, scheduler: Scheduler?, callback: @escaping @Sendable (Value) -> Void) {
        self.callback = callback
        self.scheduler = scheduler
        self.callbacker = callbacker
    }

    @inlinable
    var isLive: Bool { liveness.load(ordering: .acquiring) }

    /// Unregisters the callback, once.
    @usableFromInline
    func unregister() {
        guard liveness.exchange(false, ordering: .acquiringAndReleasing) else { return }
        callbacker?.remove(self)
    }
}

/// What `addCallback` and a Callbacker-backed signal's `onValue` return: disposing it, or letting go of
/// it, unregisters the callback (Flow's rule for disposables). Once disposed it holds nothing, so the
/// closure is released even while the handle is kept. A second object besides the node because the
/// list keeps the node alive: the handle's release is what tells that the caller let go.
// @unchecked Sendable: the only stored property is atomic.
@usableFromInline
final class CallbackerHandle<Value: Sendable>: Disposable, @unchecked Sendable {
    @usableFromInline let node: Atomic<Unmanaged<CallbackerNode<Value>>?>

    @inlinable
    init(_ node: CallbackerNode<Value>) {
        self.node = Atomic(Unmanaged.passRetained(node))
    }

    @usableFromInline
    func dispose() {
        guard let node = node.exchange(nil, ordering: .acquiringAndReleasing) else { return }
        node.takeRetainedValue().unregister()
    }

    deinit { dispose() }
}
