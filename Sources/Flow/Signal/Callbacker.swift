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
/// at a time instead: a value sent while another is being delivered (from another thread, or from a
/// callback) waits until every callback has had the current one, and is then delivered by the thread
/// already delivering, to the callbacks registered when it was sent that are still registered.
// How a value reaches the signal listeners. The list refers to a listener without retaining it (the
// caller's handle is the listener, and its release unregisters it), so a delivery never touches a
// listener outside the lock: under the lock, where every listener in the list is valid (its `deinit`
// has not passed its locked removal), the delivering thread copies what a batch of up to `batchLimit`
// registrations needs (each closure, retained, and for a listener on another scheduler that scheduler
// and where the listener is registered) into `batch`; it then calls them outside the lock. A listener
// removed on the delivering thread meanwhile (by a callback) clears its slot, so it gets nothing more;
// one removed from another thread may still get the value in flight, whose closure the slot keeps
// valid. A hop to another scheduler carries the copied closure and checks, when it runs, that the
// listener is still registered.
//
// @unchecked Sendable: every stored property is read and written under `lock`, except `batch`'s slots,
// which only the delivering thread (`isDelivering`, `deliveringThread`) touches. The lock also makes
// the accesses exclusive, hence `@exclusivity(unchecked)` (the dynamic checks are a measurable part of
// a delivery).
public final class Callbacker<Value: Sendable>: @unchecked Sendable {
    @usableFromInline
    typealias Node = CallbackerNode<Value>
    @usableFromInline
    typealias Listener = CallbackerListener<Value>
    @usableFromInline
    typealias Registration = CallbackerRegistration<Value>
    @usableFromInline
    typealias Delivery = CallbackerDelivery<Value>

    /// The registrations copied per lock hold while a value is delivered: what bounds `batch`, however
    /// many listeners there are.
    @usableFromInline
    static var batchLimit: Int { 32 }

    @usableFromInline let lock = FutureLock()
    /// The callbacks in the order added. A removed one leaves a hole (`nil`) until holes are half the
    /// array, which is then compacted (between two values while a delivery is in progress, since
    /// positions are what the queued values' bounds and the batch refer to).
    @usableFromInline @exclusivity(unchecked) var registrations: ContiguousArray<Registration?> = []
    @usableFromInline @exclusivity(unchecked) var holeCount = 0
    /// The signal listeners among `registrations`: while there is one, values are delivered one at a time.
    @usableFromInline @exclusivity(unchecked) var listenerCount = 0
    /// The serial of the next listener: with its position, what tells a hop that it is still registered.
    @usableFromInline @exclusivity(unchecked) var nextSerial: UInt32 = 0
    /// Counts compactions: a position taken while it is unchanged still names the same registration.
    @usableFromInline @exclusivity(unchecked) var layout = 0
    @usableFromInline @exclusivity(unchecked) var isDelivering = false
    /// The delivering thread's ``ThreadState``: a removal on that thread clears its slot of `batch`.
    @usableFromInline @exclusivity(unchecked) var deliveringThread: UnsafeMutableRawPointer?
    /// Values waiting for the delivery in progress, each with the number of positions registered when
    /// it was sent: it goes to those still registered.
    @usableFromInline @exclusivity(unchecked) var pending: [(value: Value, bound: Int)?] = []
    @usableFromInline @exclusivity(unchecked) var pendingHead = 0
    /// The deliveries of positions `batchStart..<batchStart + batchCount`, slot by slot (`nil` for a hole
    /// or a delivery already made or cleared). Kept between values: no allocation per value.
    @usableFromInline @exclusivity(unchecked) var batch: UnsafeMutablePointer<Delivery?>?
    @usableFromInline @exclusivity(unchecked) var batchCapacity = 0
    @usableFromInline @exclusivity(unchecked) var batchStart = 0
    @usableFromInline @exclusivity(unchecked) var batchCount = 0

    /// Creates a callbacker with no callbacks.
    public init() {}

    deinit {
        if let batch {
            batch.deinitialize(count: batchCapacity)
            batch.deallocate()
        }
    }

    /// Whether no callback is registered.
    public var isEmpty: Bool {
        lock.withLock { registrations.count == holeCount }
    }

    /// Registers `callback` to be called by every later ``callAll(with:)``.
    ///
    /// - Returns: a disposable that unregisters the callback (and lets go of it); letting go of the
    ///   disposable unregisters it too, as in Flow, so keep it (a ``DisposeBag`` is the usual place).
    @preconcurrency @inlinable
    public func addCallback(_ callback: @escaping @Sendable (Value) -> Void) -> Disposable {
        let node = Node(callbacker: self, callback: callback)
        lock.lock()
        node.index = UInt32(registrations.count)
        registrations.append(.callback(node))
        lock.unlock()
        return CallbackerHandle(node)
    }

    /// Registers a signal listener: `callback` runs on `scheduler` with every later value, one value at
    /// a time. The returned listener is the registration itself: letting go of it unregisters it, as
    /// disposing it does.
    @inlinable
    func addListener(on scheduler: Scheduler, _ callback: @escaping @Sendable (Value) -> Void) -> Disposable {
        let listener = Listener(callbacker: self, scheduler: scheduler, callback: callback)
        lock.lock()
        listener.index = UInt32(registrations.count)
        listener.serial = nextSerial
        nextSerial &+= 1
        registrations.append(.listener(Unmanaged.passUnretained(listener)))
        listenerCount &+= 1
        lock.unlock()
        return listener
    }

    /// Calls every registered callback with `value`, in the order they were added.
    @inlinable
    public func callAll(with value: Value) {
        lock.lock()
        if listenerCount == 0 {
            let snapshot = registrations
            lock.unlock()
            callCallbacks(snapshot, with: value)
            return
        }
        if isDelivering {
            pending.append((value, registrations.count))
            lock.unlock()
            return
        }
        isDelivering = true
        let context = ThreadContext.current
        deliveringThread = UnsafeMutableRawPointer(context.state)
        deliverInTurn(first: value, bound: registrations.count, context: context)
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

    /// Calls the live plain callbacks of `snapshot` (there is no listener) at once: the snapshot keeps
    /// them alive.
    @inlinable
    func callCallbacks(_ snapshot: ContiguousArray<Registration?>, with value: Value) {
        for case .callback(let node)? in snapshot where node.isLive {
            node.callback(value)
        }
    }

    /// Delivers `first` to the registrations at positions below `firstBound`, then the values queued
    /// meanwhile, until none is left. Called with the lock held; returns with it released.
    @inlinable
    func deliverInTurn(first: Value, bound firstBound: Int, context: ThreadContext) {
        let current = context.currentScheduler
        var value = first
        var bound = firstBound
        var position = 0
        while true {
            if position < bound {
                position = fillBatch(from: position, to: bound, current: current)
                let count = batchCount
                lock.unlock()
                runBatch(count, with: value, current: current, context: context)
                lock.lock()
                batchCount = 0
                continue
            }
            if holeCount &* 2 > registrations.count { compact() }
            guard pendingHead < pending.count, let next = pending[pendingHead].take() else {
                isDelivering = false
                deliveringThread = nil
                if !pending.isEmpty { pending.removeAll(keepingCapacity: true) }  // holds only nils here
                pendingHead = 0
                lock.unlock()
                return
            }
            pendingHead &+= 1
            lock.unlock()
            value = next.value  // the previous value is released outside the lock
            bound = next.bound
            position = 0
            lock.lock()
        }
    }

    /// Copies what delivering to positions `start..<min(bound, start + batchLimit)` needs into `batch`
    /// (under `lock`): returns the position after the last one copied.
    @inlinable
    func fillBatch(from start: Int, to bound: Int, current: Scheduler?) -> Int {
        let end = Swift.min(bound, start &+ Self.batchLimit)
        let count = end &- start
        if count > batchCapacity { growBatch(to: count) }
        let slots = batch.unsafelyUnwrapped
        let layout = self.layout
        registrations.withUnsafeBufferPointer { registered in
            for offset in 0..<count {
                switch registered[start &+ offset] {
                case .listener(let listener)?:
                    // Every slot is empty (`nil`, which owns nothing) here: initialised over, not assigned.
                    (slots + offset).initialize(to: listener._withUnsafeGuaranteedRef { listener in
                        if listener.scheduler === current { return .direct(listener.callback) }
                        let location = CallbackerListenerLocation(
                            layout: layout, index: listener.index, serial: listener.serial,
                            address: UInt(bitPattern: Unmanaged.passUnretained(listener).toOpaque()))
                        return .scheduled(listener.callback, listener.scheduler, location)
                    })
                case .callback(let node)?:
                    (slots + offset).initialize(to: .callback(node))
                case nil:
                    break
                }
            }
        }
        batchStart = start
        batchCount = count
        return end
    }

    /// Makes `batch` hold at least `count` slots (under `lock`, between two batches: every slot is `nil`).
    @usableFromInline
    func growBatch(to count: Int) {
        let capacity = Swift.min(Self.batchLimit, Swift.max(count, batchCapacity * 2))
        let grown = UnsafeMutablePointer<Delivery?>.allocate(capacity: capacity)
        grown.initialize(repeating: nil, count: capacity)
        if let batch {
            batch.deinitialize(count: batchCapacity)
            batch.deallocate()
        }
        batch = grown
        batchCapacity = capacity
    }

    /// Makes the first `count` deliveries of `batch` (outside the lock), taking each out of its slot
    /// first: a slot cleared meanwhile by a removal on this thread is skipped.
    @inlinable
    func runBatch(_ count: Int, with value: Value, current: Scheduler?, context: ThreadContext) {
        let slots = batch.unsafelyUnwrapped
        for offset in 0..<count {
            switch (slots + offset).move() {
            case nil:
                (slots + offset).initialize(to: nil)
                continue
            case .direct(let callback)?:
                (slots + offset).initialize(to: nil)
                callback(value)
            case .callback(let node)?:
                (slots + offset).initialize(to: nil)
                if node.isLive { node.callback(value) }
            case .scheduled(let callback, let scheduler, let location)?:
                (slots + offset).initialize(to: nil)
                if scheduler.identity == current?.identity || scheduler.isImmediate(in: context) {
                    callback(value)
                } else {
                    scheduler.async { [self] in
                        if isRegistered(location) { callback(value) }
                    }
                }
            }
        }
    }

    /// Whether the listener a hop was made for is still registered (it gets the value only then).
    @usableFromInline
    func isRegistered(_ location: CallbackerListenerLocation) -> Bool {
        lock.withLock {
            if location.layout == layout {
                // Positions are not reused until a compaction: the same one, or a hole.
                return registrations[Int(location.index)] != nil
            }
            // Compacted since: compaction only moves a registration to a lower position.
            var index = Swift.min(Int(location.index), registrations.count - 1)
            while index >= 0 {
                if case .listener(let listener)? = registrations[index],
                   UInt(bitPattern: listener.toOpaque()) == location.address {
                    return listener._withUnsafeGuaranteedRef { $0.serial } == location.serial
                }
                index -= 1
            }
            return false
        }
    }

    /// Takes a plain callback out of the list (it is released outside the lock).
    @usableFromInline
    func remove(_ node: Node) {
        let removed = lock.withLock { () -> Registration? in
            let index = Int(node.index)
            guard index < registrations.count, case .callback(let registered)? = registrations[index],
                  registered === node
            else { return nil }
            let removed = registrations[index].take()
            holeCount += 1
            if !isDelivering, holeCount * 2 > registrations.count { compact() }
            return removed
        }
        // Its last reference, dropped here, after the lock: the callback's captures may deinitialise
        // objects that send into, or listen on, this same callbacker.
        _ = removed
    }

    /// Takes a listener out of the list, from its `dispose()` (taking its closure too, so that a kept
    /// listener holds none) or its `deinit`. On the delivering thread it also clears the listener's slot
    /// of the batch being delivered, so that it gets nothing more. What it takes is released outside
    /// the lock.
    @usableFromInline
    func remove(_ listener: Listener, takingCallback: Bool) {
        let thread = UnsafeMutableRawPointer(ThreadContext.current.state)
        let (callback, slot) = lock.withLock { () -> ((@Sendable (Value) -> Void)?, Int) in
            let index = Int(listener.index)
            guard index != Int(UInt32.max) else { return (nil, -1) }
            registrations[index] = nil
            listener.index = .max
            holeCount += 1
            listenerCount -= 1
            var callback: (@Sendable (Value) -> Void)?
            if takingCallback {
                callback = listener.callback
                listener.callback = { _ in }
            }
            var slot = -1
            if isDelivering {
                if deliveringThread == thread, index >= batchStart, index < batchStart + batchCount {
                    slot = index - batchStart
                }
            } else if holeCount * 2 > registrations.count {
                compact()
            }
            return (callback, slot)
        }
        if slot >= 0 {
            // This thread is the delivering one, inside a callback of this batch: nobody else touches it.
            let cleared = batch.unsafelyUnwrapped[slot].take()
            _ = cleared
        }
        _ = callback
    }

    /// Drops the holes and renumbers the registrations left, and the queued values' bounds with them
    /// (under `lock`, never while a batch is being delivered; releases nothing).
    @usableFromInline
    func compact() {
        layout &+= 1
        defer { holeCount = 0 }
        var kept = 0
        var queued = pendingHead
        registrations.withUnsafeMutableBufferPointer { registered in
            for position in registered.indices {
                while queued < pending.count, pending[queued].unsafelyUnwrapped.bound <= position {
                    pending[queued]!.bound = kept
                    queued += 1
                }
                guard registered[position] != nil else { continue }
                if position != kept { registered.swapAt(position, kept) }
                switch registered[kept].unsafelyUnwrapped {
                case .callback(let node): node.index = UInt32(kept)
                case .listener(let listener): listener._withUnsafeGuaranteedRef { $0.index = UInt32(kept) }
                }
                kept += 1
            }
        }
        while queued < pending.count {
            pending[queued]!.bound = kept
            queued += 1
        }
        if kept == 0 {
            registrations = []
        } else {
            registrations.removeLast(registrations.count - kept)
        }
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

/// One entry of a ``Callbacker``'s list: a plain callback, which the list keeps alive, or a signal
/// listener, which the list refers to without keeping it alive (its holder does; its `deinit` takes it
/// out of the list under the callbacker's lock).
@usableFromInline
enum CallbackerRegistration<Value: Sendable> {
    case callback(CallbackerNode<Value>)
    case listener(Unmanaged<CallbackerListener<Value>>)
}

/// One delivery of the batch a ``Callbacker`` is delivering: what was copied from a registration under
/// the lock.
@usableFromInline
enum CallbackerDelivery<Value: Sendable> {
    /// A plain callback (its liveness is checked right before the call).
    case callback(CallbackerNode<Value>)
    /// A listener on the scheduler the delivery runs on: its closure, called at once.
    case direct(@Sendable (Value) -> Void)
    /// A listener on another scheduler: its closure, its scheduler and where it is registered.
    case scheduled(@Sendable (Value) -> Void, Scheduler, CallbackerListenerLocation)
}

/// Where a listener was registered when a value was sent to it through its scheduler: what the hop
/// checks, under the callbacker's lock, before calling the closure.
@usableFromInline
struct CallbackerListenerLocation: Sendable {
    /// The callbacker's compaction count then: unchanged, `index` still names the listener's position.
    @usableFromInline let layout: Int
    @usableFromInline let index: UInt32
    @usableFromInline let serial: UInt32
    /// The listener's address, only compared (never dereferenced unless found in the list).
    @usableFromInline let address: UInt

    @inlinable
    init(layout: Int, index: UInt32, serial: UInt32, address: UInt) {
        self.layout = layout
        self.index = index
        self.serial = serial
        self.address = address
    }
}

/// One plain callback of a ``Callbacker`` (``Callbacker/addCallback(_:)``): its closure and whether it
/// is still registered. The list holds it; what the caller holds is a ``CallbackerHandle``, whose
/// release unregisters it. Plain callbacks are called from several threads at once, nested, from
/// snapshots of the list that keep them alive.
///
/// A call checks `isLive` (atomic) right before calling: a callback disposed on the calling thread gets
/// nothing more.
// @unchecked Sendable: `index` is read and written under the callbacker's lock; `liveness` is atomic;
// `callbacker` is a weak reference written once, at initialisation; the rest is immutable.
@usableFromInline
final class CallbackerNode<Value: Sendable>: @unchecked Sendable {
    @usableFromInline let callback: @Sendable (Value) -> Void
    /// Weak, so that a callback nobody disposes does not keep its callbacker alive through the list.
    @usableFromInline weak var callbacker: Callbacker<Value>?
    /// The position in the callbacker's list: guarded by the callbacker's lock.
    @usableFromInline @exclusivity(unchecked) var index: UInt32 = 0
    @usableFromInline let liveness = Atomic<Bool>(true)

    @inlinable
    init(callbacker: Callbacker<Value>, callback: @escaping @Sendable (Value) -> Void) {
        self.callback = callback
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

/// What `addCallback` returns: disposing it, or letting go of it, unregisters the callback (Flow's rule
/// for disposables). Once disposed it holds nothing, so the closure is released even while the handle
/// is kept. A second object besides the node because the list keeps the node alive: the handle's
/// release is what tells that the caller let go.
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

/// One signal listener of a ``Callbacker`` (`onValue` on `Signal(callbacker:)` or a `ReadWriteSignal`):
/// its closure, its scheduler, and where it is in the callbacker's list. It is also what the caller
/// holds: the list refers to it without retaining it, so the caller's reference is the only one, and
/// letting go of it unregisters it (its `deinit` takes it out of the list), as disposing it does.
///
/// One object of 56 bytes (a 64-byte malloc chunk) per listener. A delivery reads its fields only under
/// the callbacker's lock, where a listener in the list is valid: its `deinit` has not passed its locked
/// removal, and its fields are destroyed only after that.
// @unchecked Sendable: `callback`, `index` and `serial` are read and written under the callbacker's
// lock once registered (`dispose()` takes the closure out under it); `callbacker` is a weak reference
// written once, at initialisation; `scheduler` is immutable.
@usableFromInline
final class CallbackerListener<Value: Sendable>: Disposable, @unchecked Sendable {
    @usableFromInline @exclusivity(unchecked) var callback: @Sendable (Value) -> Void
    @usableFromInline let scheduler: Scheduler
    /// Weak, as a plain callback's: a listener kept after its callbacker went does not keep it alive.
    @usableFromInline weak var callbacker: Callbacker<Value>?
    /// The position in the callbacker's list, `UInt32.max` once unregistered.
    @usableFromInline @exclusivity(unchecked) var index: UInt32 = .max
    /// Tells this listener from a later one at the same address, for a hop to its scheduler.
    @usableFromInline @exclusivity(unchecked) var serial: UInt32 = 0

    @inlinable
    init(callbacker: Callbacker<Value>, scheduler: Scheduler, callback: @escaping @Sendable (Value) -> Void) {
        self.callback = callback
        self.scheduler = scheduler
        self.callbacker = callbacker
    }

    /// Unregisters the listener and lets go of its closure (once the callbacker is gone, nothing can
    /// call it any more, and the closure goes with the listener).
    @usableFromInline
    func dispose() {
        callbacker?.remove(self, takingCallback: true)
    }

    deinit {
        callbacker?.remove(self, takingCallback: false)
    }
}
