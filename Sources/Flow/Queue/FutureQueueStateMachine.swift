/// The bookkeeping of a ``FutureQueue``, without threads, locks or futures: which operations run, which
/// wait and in what order, whether the queue is closed, and who waits for it to become empty.
///
/// Every mutating method returns what the caller must do (start an operation, fail some, complete
/// the empty waiters); the queue performs those actions after releasing its lock, so no user code
/// ever runs under it. Being a plain value, it is unit-tested directly.
///
/// Invariants:
/// - `runningCount <= maxConcurrentCount`;
/// - something waits only when every slot is taken: `!waiting.isEmpty` implies
///   `runningCount == maxConcurrentCount` (so removing a waiting operation never empties the queue);
/// - every waiting ticket is in `nextTicketToStart..<nextTicket`, and tickets start in increasing
///   order, which is the order of ``enqueue(_:)`` calls.
struct FutureQueueStateMachine<Work, EmptyWaiter> {
    /// Identifies a waiting operation, or an empty waiter, so that it can be removed when cancelled.
    typealias Ticket = UInt64

    private enum State {
        /// Accepting operations.
        case open
        /// Closed by ``abortWaiting(with:closing:)``: new operations are rejected with the error.
        case closed(any Error)
    }

    /// What to do with an operation just enqueued.
    enum EnqueueAction {
        /// A slot was free: start the operation now. It holds the slot until
        /// ``operationDidFinish()`` is called for it.
        case start(Work)
        /// Every slot is taken: the operation waits under this ticket.
        case wait(Ticket)
        /// The queue is closed: fail the operation with this error without running it.
        case reject(any Error)
    }

    /// What to do once a running operation finished.
    enum FinishAction {
        /// Start this operation, the oldest waiting one, in the slot just freed.
        case start(Work)
        /// Nothing is running or waiting any more: complete these waiters (possibly none).
        case becameEmpty([EmptyWaiter])
        /// The slot was freed; other operations still run.
        case none
    }

    /// What to do with someone asking to hear when the queue is empty.
    enum EmptyWaitAction: Equatable {
        /// The queue is empty now.
        case emptyNow
        /// The waiter was stored under this ticket, until the queue becomes empty.
        case wait(Ticket)
    }

    /// How many operations may run at once (at least 1).
    let maxConcurrentCount: Int

    private var state: State = .open
    /// Operations started and not finished.
    private(set) var runningCount = 0
    /// Operations waiting for a slot, by ticket; a cancelled one is simply removed.
    private var waiting: [Ticket: Work] = [:]
    private var nextTicket: Ticket = 0
    /// Every ticket below this one has started or been removed.
    private var nextTicketToStart: Ticket = 0
    /// Waiters for emptiness, in the order they asked.
    private var emptyWaiters: [(ticket: Ticket, waiter: EmptyWaiter)] = []
    private var nextWaiterTicket: Ticket = 0

    init(maxConcurrentCount: Int) {
        precondition(
            maxConcurrentCount >= 1,
            "FutureQueue: maxConcurrentCount must be at least 1 (got \(maxConcurrentCount))")
        self.maxConcurrentCount = maxConcurrentCount
    }

    /// How many operations wait for a slot.
    var waitingCount: Int { waiting.count }

    /// Whether nothing runs and nothing waits.
    var isEmpty: Bool { runningCount == 0 && waiting.isEmpty }

    /// The error new operations are rejected with, once the queue is closed.
    var closedError: (any Error)? {
        if case .closed(let error) = state { return error }
        return nil
    }

    /// Adds an operation: started at once if a slot is free, otherwise queued behind the others.
    mutating func enqueue(_ work: Work) -> EnqueueAction {
        if case .closed(let error) = state { return .reject(error) }
        if runningCount < maxConcurrentCount {
            assert(waiting.isEmpty, "FutureQueueStateMachine: an operation waits while a slot is free")
            runningCount += 1
            return .start(work)
        }
        let ticket = nextTicket
        nextTicket += 1
        waiting[ticket] = work
        return .wait(ticket)
    }

    /// Removes a waiting operation (its caller cancelled it).
    ///
    /// - Returns: the operation, or `nil` when it is no longer waiting (it started, or was aborted).
    mutating func removeWaiting(_ ticket: Ticket) -> Work? {
        waiting.removeValue(forKey: ticket)
    }

    /// Records that a running operation finished, freeing its slot for the oldest waiting one.
    mutating func operationDidFinish() -> FinishAction {
        precondition(runningCount > 0, "FutureQueueStateMachine: an operation finished while none was running")
        if let next = popOldestWaiting() {
            return .start(next)  // it takes over the slot: runningCount is unchanged
        }
        runningCount -= 1
        guard runningCount == 0 else { return .none }
        let waiters = emptyWaiters.map(\.waiter)
        emptyWaiters = []
        return .becameEmpty(waiters)
    }

    /// Removes every waiting operation, and closes the queue if `closing`. Running operations are
    /// left alone.
    ///
    /// - Returns: the removed operations, in the order they were enqueued, to be failed with `error`.
    mutating func abortWaiting(with error: any Error, closing: Bool) -> [Work] {
        if closing, case .open = state {
            state = .closed(error)
        }
        guard !waiting.isEmpty else { return [] }
        let aborted = waiting.sorted { $0.key < $1.key }.map(\.value)
        waiting = [:]
        nextTicketToStart = nextTicket
        return aborted
    }

    /// Registers `waiter` to be handed back when the queue becomes empty, unless it is empty now.
    mutating func waitUntilEmpty(_ waiter: EmptyWaiter) -> EmptyWaitAction {
        if isEmpty { return .emptyNow }
        let ticket = nextWaiterTicket
        nextWaiterTicket += 1
        emptyWaiters.append((ticket, waiter))
        return .wait(ticket)
    }

    /// Removes an empty waiter (it was cancelled).
    ///
    /// - Returns: the waiter, or `nil` if it was already handed back.
    mutating func removeEmptyWaiter(_ ticket: Ticket) -> EmptyWaiter? {
        guard let index = emptyWaiters.firstIndex(where: { $0.ticket == ticket }) else { return nil }
        return emptyWaiters.remove(at: index).waiter
    }

    private mutating func popOldestWaiting() -> Work? {
        guard !waiting.isEmpty else {
            nextTicketToStart = nextTicket
            return nil
        }
        // Terminates: some waiting ticket lies in nextTicketToStart..<nextTicket. Each ticket is
        // skipped at most once over the queue's life, so this is amortised constant time.
        while true {
            let ticket = nextTicketToStart
            nextTicketToStart += 1
            if let work = waiting.removeValue(forKey: ticket) { return work }
        }
    }
}

extension FutureQueueStateMachine: Sendable where Work: Sendable, EmptyWaiter: Sendable {}
extension FutureQueueStateMachine.EnqueueAction: Sendable where Work: Sendable, EmptyWaiter: Sendable {}
extension FutureQueueStateMachine.FinishAction: Sendable where Work: Sendable, EmptyWaiter: Sendable {}
