/// A queue of asynchronous operations that run in order, at most ``maxConcurrentCount`` at a time:
/// for exclusive access to a resource, or for independent operations that must run one after the
/// other.
///
/// Each operation starts once a slot is free and holds it until the future it returned completes.
/// Operations run on the queue's scheduler (`executeOn`); the future `enqueue` returns completes on
/// the scheduler its caller was running on.
///
/// ```swift
/// let database = FutureQueue(resource: connection)
/// database.enqueue { database.resource.insert(order) }
/// // Runs only once the insert's future has completed:
/// database.enqueue { database.resource.count(of: Order.self) }
///     .onValue { count in print("\(count) orders") }
/// ```
///
/// Cancelling a future returned by `enqueue` before its operation started removes the operation: its
/// closure is never called. Cancelling it while the operation runs cancels the operation's future
/// and frees the slot.
///
/// Thread safety: operations may be enqueued, cancelled and completed from any threads at once. The
/// queue's lock guards only its bookkeeping and is never held while an operation, a callback or a
/// completion runs.
public final class FutureQueue<Resource: Sendable>: Sendable {
    /// The resource the operations share, e.g. a connection or a file.
    public let resource: Resource

    /// How many operations may run at once.
    public let maxConcurrentCount: Int

    /// Where operations are started.
    let executionScheduler: Scheduler

    typealias StateMachine = FutureQueueStateMachine<any QueuedOperation, FutureQueueEmptyWaiter>

    private struct Protected {
        var machine: StateMachine
        /// The queues of batches that are running, so that an abort reaches their operations too.
        var runningBatches: [ObjectIdentifier: FutureQueue<Resource>] = [:]
        /// The operations holding a slot, so that an abort reaches them, as Flow's queue holds its
        /// running items: even one whose future nobody else keeps (its operation dropped its
        /// completion callback) can be aborted or cancelled. The entry keeps this queue alive while
        /// it runs; the cycle ends when it finishes, is aborted or is cancelled.
        var running: [ObjectIdentifier: RunningOperation] = [:]
        /// How many operations started so far: operations start in the order they were enqueued.
        var startCount: UInt64 = 0

        /// Records that `operation` holds a slot now.
        mutating func didStart(_ operation: any QueuedOperation) {
            running[ObjectIdentifier(operation)] = RunningOperation(startOrder: startCount, operation: operation)
            startCount += 1
        }
    }

    private let state: Locked<Protected>

    /// Called with the new `isEmpty` each time the queue becomes empty or non-empty.
    let emptinessChanged = Callbacker<Bool>()

    /// Creates a queue whose operations share `resource`.
    ///
    /// ```swift
    /// let files = FutureQueue(resource: FileStore(), maxConcurrentCount: 2, executeOn: .background)
    /// ```
    ///
    /// - Parameters:
    ///   - resource: what the operations share, available as ``resource``.
    ///   - maxConcurrentCount: how many operations may run at once; at least 1.
    ///   - executeOn: where the operations are started; by default the scheduler current here.
    public init(resource: Resource, maxConcurrentCount: Int = 1, executeOn: Scheduler = .current) {
        misusePrecondition(
            maxConcurrentCount >= 1,
            "FutureQueue: maxConcurrentCount must be at least 1 (got \(maxConcurrentCount))")
        self.resource = resource
        self.maxConcurrentCount = maxConcurrentCount
        executionScheduler = executeOn
        state = Locked(Protected(machine: StateMachine(maxConcurrentCount: maxConcurrentCount)))
    }

    // MARK: Enqueueing

    /// Adds an operation that returns a future. It starts once the operations before it have made
    /// room, and holds its slot until its future completes.
    ///
    /// ```swift
    /// let queue = FutureQueue()
    /// queue.enqueue { upload(first) }
    /// queue.enqueue { upload(second) }   // starts when the first upload completed
    ///     .onValue { response in print(response) }
    /// ```
    ///
    /// - Returns: a future completing like the operation's future, on the scheduler current here. It
    ///   fails with ``closedError`` if the queue is closed, with the error of
    ///   ``abortQueuedOperations(with:shouldCloseQueue:)`` if aborted while waiting, and with the
    ///   error the operation throws. Cancelling it before the operation started removes the
    ///   operation unrun. Repeating it (``Future/onErrorRepeat(on:delayBetweenRepetitions:maxRepetitions:file:line:when:)-(Scheduler,_,_,_,_,_)``,
    ///   ``Future/repeatAndCollect(repeatCount:delayBetweenRepetitions:)``) enqueues the operation again.
    @preconcurrency
    @discardableResult
    public func enqueue<Output>(
        file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @Sendable () throws -> Future<Output>
    ) -> Future<Output> {
        enqueue(file: file, line: line, resultScheduler: .current, operation)
    }

    private func enqueue<Output>(
        file: StaticString, line: UInt, resultScheduler: Scheduler,
        _ operation: @escaping @Sendable () throws -> Future<Output>
    ) -> Future<Output> {
        let promise = EnqueuedFuture<Output>(file: file, line: line) { [self] in
            enqueue(file: file, line: line, resultScheduler: resultScheduler, operation)
        }
        let entry = QueueEntry(queue: self, promise: promise, resultScheduler: resultScheduler, operation: operation)
        promise.setDisposable(QueueEntryCancellation(entry: entry))
        let action = withLockedState { protected in
            let action = protected.machine.enqueue(entry)
            if case .start(let work) = action { protected.didStart(work) }
            return action
        }
        switch action {
        case .start(let work):
            start(work)
        case .wait(let ticket):
            entry.setTicket(ticket)
        case .reject(let error):
            entry.fail(with: error)
        }
        return promise
    }

    /// Adds an operation that returns a value directly (or throws), run in order like the others.
    ///
    /// ```swift
    /// let log = FutureQueue(resource: logFile)
    /// log.enqueue { try log.resource.append("started") }
    /// ```
    ///
    /// - Returns: a future with the operation's value or error, completing on the scheduler current here.
    @preconcurrency
    @discardableResult
    public func enqueue<Output>(
        file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @Sendable () throws -> Output
    ) -> Future<Output> {
        enqueue(file: file, line: line) { () throws -> Future<Output> in Future(try operation()) }
    }

    /// Adds a batch: an operation that gets a queue of its own, sharing this queue's ``resource``,
    /// and may enqueue several operations on it. The batch holds one slot of this queue until both
    /// the future it returned has completed and its own queue is empty, so nothing else enqueued
    /// here runs in between.
    ///
    /// ```swift
    /// queue.enqueueBatch { batch in
    ///     batch.enqueue { batch.resource.begin() }
    ///     batch.enqueue { batch.resource.write(rows) }
    ///     return batch.enqueue { batch.resource.commit() }
    /// }
    /// ```
    ///
    /// An abort of this queue also aborts the operations waiting in running batches. Cancelling the
    /// returned future while the batch runs aborts (and closes) the batch's queue.
    ///
    /// - Parameters:
    ///   - maxConcurrentCount: how many operations of the batch may run at once; at least 1.
    ///   - file: where the returned future was created, for descriptions and abandonment errors (debug
    ///     builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - operation: fills the batch's queue, and returns the batch's result.
    /// - Returns: a future with the result of the future `operation` returned, delivered once the
    ///   batch's queue is empty, on the scheduler current here.
    @preconcurrency
    @discardableResult
    public func enqueueBatch<Output>(
        maxConcurrentCount: Int = 1,
        file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @Sendable (FutureQueue<Resource>) throws -> Future<Output>
    ) -> Future<Output> {
        misusePrecondition(
            maxConcurrentCount >= 1,
            "FutureQueue.enqueueBatch: maxConcurrentCount must be at least 1 (got \(maxConcurrentCount))")
        return enqueue(file: file, line: line) { [self] () throws -> Future<Output> in
            let batch = FutureQueue(
                resource: resource, maxConcurrentCount: maxConcurrentCount, executeOn: executionScheduler)
            let batchID = ObjectIdentifier(batch)
            withLockedState { $0.runningBatches[batchID] = batch }
            let batchResult: Future<Output>
            do {
                batchResult = try operation(batch)
            } catch {
                removeRunningBatch(batchID)
                throw error
            }
            return batchResult
                .flatMapResult(on: .none) { result in
                    batch.emptyFuture(deliveringOn: .none, file: file, line: line)
                        .flatMap(on: .none) { _ -> Future<Output> in Future(result: result) }
                }
                .onResult(on: .none) { [self] _ in removeRunningBatch(batchID) }
                .onCancel(on: .none) { [self] in
                    batch.abortQueuedOperations(with: FutureError.aborted, shouldCloseQueue: true)
                    removeRunningBatch(batchID)
                }
        }
    }

    /// Adds a batch like ``enqueueBatch(maxConcurrentCount:file:line:_:)-(_,_,_,(FutureQueue<Resource>)->Future<Output>)``
    /// whose operation returns a value directly (or throws): the batch completes with it once its
    /// queue is empty.
    ///
    /// ```swift
    /// queue.enqueueBatch { batch -> Int in
    ///     batch.enqueue { batch.resource.write(rows) }
    ///     return rows.count
    /// }
    /// ```
    @preconcurrency
    @discardableResult
    public func enqueueBatch<Output>(
        maxConcurrentCount: Int = 1,
        file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @Sendable (FutureQueue<Resource>) throws -> Output
    ) -> Future<Output> {
        enqueueBatch(maxConcurrentCount: maxConcurrentCount, file: file, line: line) { batch throws -> Future<Output> in
            Future(try operation(batch))
        }
    }

    // MARK: State

    /// Whether no operation is running or waiting.
    ///
    /// ```swift
    /// if uploads.isEmpty { showAllSaved() }
    /// ```
    public var isEmpty: Bool { withLockedState { $0.machine.isEmpty } }

    /// How many operations are running or waiting.
    ///
    /// ```swift
    /// badge.text = "\(uploads.count) pending"
    /// ```
    public var count: Int { withLockedState { $0.machine.runningCount + $0.machine.waitingCount } }

    /// A future that completes the next time the queue has no operation running or waiting, on the
    /// scheduler current here; completed at once if the queue is empty now. Each read gives a new
    /// future; cancelling it stops the waiting.
    ///
    /// ```swift
    /// queue.onEmpty.onValue { print("all uploads done") }
    /// ```
    public var onEmpty: Future<Void> {
        emptyFuture(deliveringOn: .current, file: #fileID, line: #line)
    }

    /// The error a closed queue fails new operations with; `nil` while the queue is open.
    ///
    /// ```swift
    /// queue.abortQueuedOperations(with: ShutdownError(), shouldCloseQueue: true)
    /// queue.closedError   // ShutdownError()
    /// ```
    public var closedError: Error? { withLockedState { $0.machine.closedError } }

    // MARK: Aborting

    /// Fails every operation with `error`, as Flow's does: the waiting ones without running them,
    /// and the running ones by cancelling their futures (which disposes what they hold), including
    /// the operations of running batches. The futures `enqueue` returned fail with `error`, in the
    /// order the operations were enqueued.
    ///
    /// ```swift
    /// queue.abortQueuedOperations(with: LoggedOutError(), shouldCloseQueue: true)
    /// queue.enqueue { fetchProfile() }   // fails with LoggedOutError()
    /// ```
    ///
    /// - Parameters:
    ///   - error: the error the waiting operations fail with.
    ///   - shouldCloseQueue: also close the queue: operations enqueued from now on fail at once
    ///     with `error` (see ``closedError``). A closed queue stays closed, with its first error.
    public func abortQueuedOperations(with error: Error, shouldCloseQueue: Bool = false) {
        let (waiting, running, batches) = withLockedState { protected in
            (
                // Taken first, so that a running operation's slot, freed below, starts none of them.
                protected.machine.abortWaiting(with: error, closing: shouldCloseQueue),
                protected.running.values.sorted { $0.startOrder < $1.startOrder }.map(\.operation),
                Array(protected.runningBatches.values)
            )
        }
        for batch in batches {
            batch.abortQueuedOperations(with: error, shouldCloseQueue: shouldCloseQueue)
        }
        // The running operations were enqueued before the waiting ones.
        for operation in running {
            operation.abortRunning(with: error)
        }
        for operation in waiting {
            operation.fail(with: error)
        }
    }

    // MARK: Performing the state machine's actions

    private func start(_ operation: any QueuedOperation) {
        executionScheduler.async { operation.start() }
    }

    /// Called once by each operation that held a slot, when it finished.
    func operationDidFinish(_ operation: any QueuedOperation) {
        let (action, finished) = withLockedState { protected in
            let finished = protected.running.removeValue(forKey: ObjectIdentifier(operation))
            let action = protected.machine.operationDidFinish()
            if case .start(let next) = action { protected.didStart(next) }
            return (action, finished)
        }
        _ = finished  // the queue's reference, dropped after the lock
        switch action {
        case .start(let next):
            start(next)
        case .becameEmpty(let waiters):
            for waiter in waiters { waiter.complete() }
        case .none:
            break
        }
    }

    /// Removes a waiting operation that was cancelled.
    ///
    /// - Returns: whether it was still waiting.
    func removeWaiting(_ ticket: StateMachine.Ticket) -> Bool {
        withLockedState { $0.machine.removeWaiting(ticket) } != nil
    }

    /// Runs `body` with the state, under the lock. `body` must not call out of the queue.
    private func withLockedState<R>(_ body: (inout Protected) -> R) -> R {
        let (result, wasEmpty, isEmptyNow) = state.withLock { state in
            let wasEmpty = state.machine.isEmpty
            let result = body(&state)
            return (result, wasEmpty, state.machine.isEmpty)
        }
        // Outside the lock: the listeners of `isEmptySignal` (see FutureQueue+Signal.swift).
        if wasEmpty != isEmptyNow { emptinessChanged.callAll(with: isEmptyNow) }
        return result
    }

    private func removeRunningBatch(_ id: ObjectIdentifier) {
        withLockedState { _ = $0.runningBatches.removeValue(forKey: id) }
    }

    func emptyFuture(deliveringOn scheduler: Scheduler, file: StaticString, line: UInt) -> Future<Void> {
        let promise = Future<Void>(initialResult: nil, file: file, line: line)
        let waiter = FutureQueueEmptyWaiter(promise: promise, scheduler: scheduler)
        switch withLockedState({ $0.machine.waitUntilEmpty(waiter) }) {
        case .emptyNow:
            return Future(file: file, line: line)
        case .wait(let ticket):
            // Weak: a waiter must not keep an idle queue alive.
            promise.setDisposable(Disposer { [weak self] in
                _ = self?.withLockedState { $0.machine.removeEmptyWaiter(ticket) }
            })
            return promise
        }
    }
}

extension FutureQueue where Resource == Void {
    /// Creates a queue with no shared resource: for operations that must run in order.
    ///
    /// ```swift
    /// let saves = FutureQueue()
    /// saves.enqueue { save(draft) }
    /// saves.enqueue { save(finalVersion) }   // never overtakes the draft
    /// ```
    ///
    /// - Parameters:
    ///   - maxConcurrentCount: how many operations may run at once; at least 1.
    ///   - executeOn: where the operations are started; by default the scheduler current here.
    public convenience init(maxConcurrentCount: Int = 1, executeOn: Scheduler = .current) {
        self.init(resource: (), maxConcurrentCount: maxConcurrentCount, executeOn: executeOn)
    }
}

/// A running operation of a ``FutureQueue``, and when it started (see `running`).
struct RunningOperation {
    let startOrder: UInt64
    let operation: any QueuedOperation
}

/// The future ``FutureQueue/enqueue(file:line:_:)-(_,_,()->Future<Output>)`` returns: a repetition of
/// it enqueues the operation again, as Flow's does.
final class EnqueuedFuture<Output: Sendable>: Future<Output>, @unchecked Sendable {
    // @unchecked Sendable: `enqueueAgain` is immutable; the rest is the inherited, locked state.
    private let enqueueAgain: @Sendable () -> Future<Output>

    init(file: StaticString, line: UInt, enqueueAgain: @escaping @Sendable () -> Future<Output>) {
        self.enqueueAgain = enqueueAgain
        super.init(initialResult: nil, file: file, line: line)
    }

    override func makeFresh() -> Future<Output> {
        enqueueAgain()
    }
}
