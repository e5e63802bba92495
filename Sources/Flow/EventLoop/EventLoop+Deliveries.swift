import Dispatch
import Synchronization

// Work on its way back to a loop holds the loop: `run()` returns only when nothing will come back.
//
// Work that a loop's context hands to another scheduler (a transform's hop to a Dispatch queue or to
// another loop, a timer set there) may deliver back to the loop: a future's listener or a signal's
// callback scheduled on it, a main-actor task to resume. Until that work has run (or been cancelled),
// the loop counts it as a pending delivery, and whatever the work hands on in turn counts for the same
// loop, so a chain of hops holds the loop from its first step to its last. The work's deliveries are
// queued on the loop before the count drops, so the loop never sees a gap between the two.
//
// The count is one atomic add and one subtract per hop, with no allocation: the loop looks at it only
// when it has nothing else to do (`loopAwaitsPendingDeliveries`), and only then does the hop that ends
// last wake it.

extension EventLoop {
    /// Counts one piece of work that may deliver back to this loop until ``endDelivery()``: ``run()``
    /// does not return meanwhile. Callable from any thread.
    @usableFromInline
    package func beginDelivery() {
        pendingDeliveryCount.add(1, ordering: .sequentiallyConsistent)
    }

    /// Ends what ``beginDelivery()`` began, once the work has run (and queued its deliveries) or was
    /// cancelled. Callable from any thread.
    @usableFromInline
    package func endDelivery() {
        let remaining = pendingDeliveryCount.subtract(1, ordering: .sequentiallyConsistent).newValue
        // Sequentially consistent with the loop's store of `isAwaitingDeliveries` and its load of the
        // count: either the loop sees this decrement, or this sees the loop waiting and wakes it.
        if remaining == 0, isAwaitingDeliveries.load(ordering: .sequentiallyConsistent) {
            nudgeKeepAlive()
        }
    }

    /// Called by ``run()`` once libuv and the queues have nothing left: whether deliveries are still
    /// pending, in which case the wake-up handle keeps `uv_run` waiting until the last one ends.
    func loopAwaitsPendingDeliveries() -> Bool {
        isAwaitingDeliveries.store(true, ordering: .sequentiallyConsistent)
        let isWaiting = pendingDeliveryCount.load(ordering: .sequentiallyConsistent) > 0
        if !isWaiting { isAwaitingDeliveries.store(false, ordering: .sequentiallyConsistent) }
        reconcileKeepAlive()
        return isWaiting
    }

    /// Counts a wait of a main-actor caller (`isolation` is the main actor) as a delivery of the main
    /// loop, whose work resumes it: ``run()`` returns only after the caller has run again. Returns
    /// whether it counted, for ``endMainActorWait(_:)``.
    package static func beginMainActorWait(_ isolation: (any Actor)?) -> Bool {
        guard isMainActorIsolation(isolation) else { return false }
        EventLoop.main.beginDelivery()
        return true
    }

    /// Ends what ``beginMainActorWait(_:)`` began, if it counted.
    package static func endMainActorWait(_ didBegin: Bool) {
        if didBegin { EventLoop.main.endDelivery() }
    }

    /// How many hops may still deliver back to this loop, for ``activeResources()``.
    var pendingDeliveries: Int { pendingDeliveryCount.load(ordering: .relaxed) }
}

extension ThreadContext {
    /// The loop that work handed from here to another scheduler may deliver back to: the loop whose
    /// work runs here; else the loop that the work running here (on a queue) was handed off from;
    /// else, on the main thread or main queue, the main loop. `nil` elsewhere.
    var loopAwaitingDelivery: EventLoop? {
        if let loop = state.pointee.currentScheduler?.eventLoop { return loop }
        if let loop = state.pointee.deliveryLoop { return loop }
        return MainThread.isMainContext(self) ? EventLoop.main : nil
    }

    /// Runs `body`, work handed off from `loop`, so that what it hands on also counts for `loop`.
    func runDelivering(to loop: EventLoop, _ body: () -> Void) {
        let saved = state.pointee.deliveryLoop
        state.pointee.deliveryLoop = loop
        body()
        state.pointee.deliveryLoop = saved
    }
}

extension DispatchQueue {
    /// `async { body(value) }`, with the work counted as a pending delivery of the loop the caller
    /// works for (see `EventLoop+Deliveries.swift`): for Deferred's executors, which submit to Dispatch
    /// queues directly. One block, as a bare `async` makes.
    @usableFromInline
    package func asyncDelivering<Value: Sendable>(
        _ value: Value, flags: DispatchWorkItemFlags = [], _ body: @escaping @Sendable (Value) -> Void
    ) {
        guard let origin = ThreadContext.current.loopAwaitingDelivery else {
            async(flags: flags) { body(value) }
            return
        }
        origin.beginDelivery()
        async(flags: flags) {
            ThreadContext.current.runDelivering(to: origin) { body(value) }
            origin.endDelivery()
        }
    }
}

extension DispatchQueue {
    /// `async(flags:execute:)`, with the work counted as a pending delivery of the loop the caller
    /// works for, as ``asyncDelivering(_:flags:_:)`` does.
    @usableFromInline
    package func asyncDelivering(flags: DispatchWorkItemFlags = [], execute work: @escaping @Sendable () -> Void) {
        guard let origin = ThreadContext.current.loopAwaitingDelivery else {
            async(flags: flags, execute: work)
            return
        }
        origin.beginDelivery()
        async(flags: flags) {
            ThreadContext.current.runDelivering(to: origin, work)
            origin.endDelivery()
        }
    }
}

/// Delayed work on another scheduler, counted as a pending delivery of the loop that set it until it
/// has run or been cancelled.
final class DeliveringDelayedWork: Disposable, Sendable {
    private struct State {
        var work: (@Sendable () -> Void)?
        var timer: Disposable?
    }

    private let origin: EventLoop
    // Guarded by its lock: whichever of run() and dispose() comes first takes the work and ends the
    // delivery.
    private let state: Locked<State>

    init(origin: EventLoop, work: @escaping @Sendable () -> Void) {
        self.origin = origin
        state = Locked(State(work: work))
        origin.beginDelivery()
    }

    /// Keeps the scheduler's own disposable, to cancel it on ``dispose()``.
    func attach(_ timer: Disposable) {
        let isDisposed = state.withLock { state -> Bool in
            guard state.work != nil else { return true }
            state.timer = timer
            return false
        }
        if isDisposed { timer.dispose() }
    }

    func run() {
        guard let work = take().work else { return }
        ThreadContext.current.runDelivering(to: origin, work)
        origin.endDelivery()
    }

    func dispose() {
        let taken = take()
        taken.timer?.dispose()
        if taken.work != nil { origin.endDelivery() }
    }

    private func take() -> State {
        state.withLock { state in
            let taken = state
            state = State()
            return taken
        }
    }
}
