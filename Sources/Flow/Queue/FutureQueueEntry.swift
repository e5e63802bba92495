/// An operation handed to a ``FutureQueue``, seen by the queue without its output type.
protocol QueuedOperation: AnyObject, Sendable {
    /// Runs the operation (on the queue's scheduler). Called once, when the operation holds a slot;
    /// it reports back with ``FutureQueue/operationDidFinish(_:)`` exactly once.
    func start()

    /// Fails the operation with `error` without running it: it never held a slot.
    func fail(with error: any Error)

    /// Fails an operation holding a slot with `error`, as Flow's abort does: its future is cancelled
    /// (so its disposable is disposed), or it never runs if it has not started yet. The slot is
    /// freed as for any finished operation.
    func abortRunning(with error: any Error)
}

/// One enqueued operation: its closure, the future its caller got (`promise`), and the running
/// state needed to cancel it.
///
/// Lock order: the queue's lock is never taken while this entry's lock is held, and vice versa;
/// both are only held for a few loads and stores.
final class QueueEntry<Resource: Sendable, Output: Sendable>: QueuedOperation, Sendable {
    private struct State {
        /// The operation, until it is started (then released, so its captures go with it).
        var operation: (@Sendable () throws -> Future<Output>)?
        /// The ticket while the operation waits in the queue.
        var ticket: FutureQueueStateMachine<any QueuedOperation, FutureQueueEmptyWaiter>.Ticket?
        /// The caller cancelled `promise`, or the queue aborted the operation while it held a slot:
        /// it must not run, or its future must be cancelled once known.
        var isCancelled = false
        /// The continuation this entry put on the operation's future, while running. Weak: the
        /// operation's future owns it (and it owns this entry), so a strong reference here would
        /// make a cycle for futures that never complete.
        weak var observed: Future<Output>?
        /// The result was delivered (or the operation was dropped): nothing more to do.
        var isFinished = false
    }

    /// Strong: a running or waiting operation keeps its queue alive, so that the queue keeps
    /// going even when its owner let go of it.
    let queue: FutureQueue<Resource>
    let promise: Future<Output>
    /// Where the caller of `enqueue` was running: the result is delivered there.
    let resultScheduler: Scheduler
    private let state: Locked<State>

    init(
        queue: FutureQueue<Resource>, promise: Future<Output>, resultScheduler: Scheduler,
        operation: @escaping @Sendable () throws -> Future<Output>
    ) {
        self.queue = queue
        self.promise = promise
        self.resultScheduler = resultScheduler
        state = Locked(State(operation: operation))
    }

    private func withState<R>(_ body: (inout State) -> R) -> R {
        state.withLock(body)
    }

    func setTicket(_ ticket: FutureQueueStateMachine<any QueuedOperation, FutureQueueEmptyWaiter>.Ticket) {
        withState { state in
            if !state.isFinished { state.ticket = ticket }
        }
    }

    func start() {
        let operation = withState { state -> (@Sendable () throws -> Future<Output>)? in
            guard !state.isCancelled, !state.isFinished else { return nil }
            let operation = state.operation
            state.operation = nil
            state.ticket = nil
            return operation
        }
        guard let operation else {
            // Cancelled between leaving the waiting list and getting here: it must not run.
            finish(with: .failure(FutureError.aborted))
            return
        }
        let future: Future<Output>
        do {
            future = try operation()
        } catch {
            finish(with: .failure(error))
            return
        }
        let observed = future.onResult(on: .none) { [self] result in finish(with: result) }
        let wasCancelled = withState { state -> Bool in
            if state.isCancelled { return true }
            if !state.isFinished { state.observed = observed }
            return false
        }
        if wasCancelled {
            observed.cancelQuietly()
            finish(with: .failure(FutureError.aborted))
        }
    }

    func fail(with error: any Error) {
        let isFirst = withState { state -> Bool in
            guard !state.isFinished else { return false }
            state.isFinished = true
            state.operation = nil
            return true
        }
        if isFirst { deliver(.failure(error)) }
    }

    func abortRunning(with error: any Error) {
        let (isRunning, observed) = withState { state -> (Bool, Future<Output>?) in
            guard !state.isFinished else { return (false, nil) }
            // Stops `start()` from running the operation, or from keeping the future it got.
            state.isCancelled = true
            let observed = state.observed
            state.observed = nil
            return (true, observed)
        }
        guard isRunning else { return }
        observed?.cancelQuietly()
        finish(with: .failure(error))
    }

    /// The caller cancelled `promise` (which already completed with ``FutureError/aborted``).
    func cancel() {
        let (ticket, observed) = withState { state in
            state.isCancelled = true
            let taken = (state.isFinished ? nil : state.ticket, state.observed)
            state.observed = nil
            return taken
        }
        if let ticket, queue.removeWaiting(ticket) {
            // Removed before it started: its closure is dropped uncalled, and it held no slot.
            withState { state in
                state.isFinished = true
                state.operation = nil
            }
            return
        }
        if let observed {
            // Running: cancel it (and its operation, unless others observe it), and free the slot.
            observed.cancelQuietly()
            finish(with: .failure(FutureError.aborted))
        }
        // Otherwise it is about to start, and `start()` sees the cancellation; or it is done.
    }

    /// The operation finished while holding a slot: deliver its result, then free the slot.
    private func finish(with result: Result<Output>) {
        let isFirst = withState { state -> Bool in
            guard !state.isFinished else { return false }
            state.isFinished = true
            state.observed = nil
            return true
        }
        guard isFirst else { return }
        // Delivered first, so that results reach their callers in the order the operations
        // finished even when the next operation starts and finishes synchronously.
        deliver(result)
        queue.operationDidFinish(self)
    }

    private func deliver(_ result: Result<Output>) {
        guard !promise.isCompleted else { return }  // cancelled: nobody waits for it
        let promise = self.promise
        resultScheduler.async { promise.complete(with: result) }
    }
}

/// The disposable of the future `enqueue` returned: cancelling that future cancels the entry.
///
/// Weak, so that the returned future does not keep the entry (and through it the queue) alive; the
/// queue holds waiting entries, and a running entry is held by its operation's future.
struct QueueEntryCancellation: Disposable {
    weak var entry: (any QueuedOperationCancellable)?

    func dispose() { entry?.cancel() }
}

/// An entry that can be cancelled through ``QueueEntryCancellation``.
protocol QueuedOperationCancellable: AnyObject, Sendable {
    func cancel()
}

extension QueueEntry: QueuedOperationCancellable {}

/// A caller waiting for a ``FutureQueue`` to become empty: the future it got, and where to complete it.
struct FutureQueueEmptyWaiter: Sendable {
    let promise: Future<Void>
    let scheduler: Scheduler

    func complete() {
        let promise = self.promise
        scheduler.async { promise.complete(with: .success(())) }
    }
}
