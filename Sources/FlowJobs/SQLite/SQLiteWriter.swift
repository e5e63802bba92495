import CSQLite
import Flow
import FlowTimers
import Foundation
import Synchronization

/// The one writer of an SQLite store: runs requests against the store's connection, many per
/// transaction (group commit), and settles each request only once its transaction committed.
///
/// Each request of a batch of several runs in a savepoint of its own, so that a request that fails
/// rolls back alone and the others of its batch still commit. A batch that cannot begin because
/// another connection holds the write lock is retried with a backoff; when it still cannot, every
/// request of the batch fails with
/// ``JobStoreError/busy(message:)``.
///
/// With ``SQLiteJobStore/Execution/writerThread`` the requests queue for a thread of the writer's
/// own, which takes everything queued as one batch; with ``SQLiteJobStore/Execution/callingThread``
/// each request runs at once on the thread that submits it.
final class SQLiteWriter: Sendable {
    struct Request: Sendable {
        /// The request's work, inside its savepoint.
        let run: @Sendable (SQLiteConnection) throws -> Void
        /// Called once, after the commit (`nil`) or with the error that failed the request.
        let settle: @Sendable ((any Error)?) -> Void
        /// The loop that submitted the request and polls for its result, if any.
        var polling: SQLiteLoopPolling? = nil
    }

    private struct Queue {
        /// Marks the writer thread awake again, and tells whether the caller must signal it.
        mutating func wakesWriter() -> Bool {
            defer { isWriterSleeping = false }
            return isWriterSleeping
        }

        var requests: [Request] = []
        var isClosed = false
        /// Called once the connection has closed.
        var whenClosed: [@Sendable () -> Void] = []
        var hasClosedConnection = false
        /// Whether the writer thread waits on `wakeWriter`: only then does new work signal it, once.
        var isWriterSleeping = false
    }

    /// The connection, `nil` once closed. Locked for a whole batch, so it is used by one thread at a time.
    private let connection: Locked<SQLiteConnection?>
    private let queue = Locked(Queue())
    /// Signalled once for each time the writer thread goes to sleep (`Queue.isWriterSleeping`), by
    /// the first work that comes; the writer thread waits on it.
    private let wakeWriter = DispatchSemaphore(value: 0)
    /// Set with any new work for the writer thread (a request, a commit check, the close), cleared
    /// when it takes its queue: what the writer thread watches while it spins for the next request.
    private let hasWork = Atomic<Bool>(false)
    /// The loops that submit requests from their own threads, each polling while its requests are
    /// in flight (see ``SQLiteLoopPolling``).
    private let loopPollings = Locked<[ObjectIdentifier: SQLiteLoopPolling]>([:])
    private let usesWriterThread: Bool
    private let busyRetryLimit: Int
    private let busyBackoff: Backoff
    private let onBusyRetry: (@Sendable (Int) -> Void)?
    /// Set when the database's files changed: the writer thread checks for other connections' commits.
    private let needsCommitCheck = Atomic<Bool>(false)
    /// `PRAGMA data_version` at the last check: it changes only when another connection commits.
    private let dataVersion = Locked<Int64?>(nil)
    private let observers = Locked<(next: UInt64, byKey: [UInt64: @Sendable (JobStoreNotification) -> Void])>(
        (0, [:]))

    init(
        connection: sending SQLiteConnection, usesWriterThread: Bool, busyRetryLimit: Int, busyBackoff: Backoff,
        onBusyRetry: (@Sendable (Int) -> Void)?
    ) {
        self.connection = Locked(connection)
        self.usesWriterThread = usesWriterThread
        self.busyRetryLimit = busyRetryLimit
        self.busyBackoff = busyBackoff
        self.onBusyRetry = onBusyRetry
        if usesWriterThread {
            let thread = Thread { [self] in runWriterThread() }
            thread.name = "flow.jobs.sqlite-writer"
            thread.start()
        }
    }

    // MARK: Submitting

    /// Runs `work` in the next batch; the future completes with its result after the commit.
    func submit<Value: Sendable>(_ work: @escaping @Sendable (SQLiteConnection) throws -> Value) -> Future<Value> {
        Future<Value>(on: .none) { completion in
            let produced = Locked<Value?>(nil)
            self.submit(Request(
                run: { connection in
                    let value = try work(connection)
                    produced.withLock { $0 = value }
                },
                settle: { error in
                    if let error {
                        completion(.failure(error))
                    } else if let value = produced.withLock({ $0.take() }) {
                        completion(.success(value))
                    }
                }))
            return NilDisposer()
        }
    }

    private func submit(_ request: Request) {
        guard usesWriterThread else {
            runBatch([request])
            return
        }
        var request = request
        request.polling = pollingOfCurrentLoop()
        let (accepted, wakes) = queue.withLock { queue in
            guard !queue.isClosed else { return (false, false) }
            queue.requests.append(request)
            hasWork.store(true, ordering: .releasing)
            return (true, queue.wakesWriter())
        }
        if accepted {
            request.polling?.requestSubmitted()
            if wakes { wakeWriter.signal() }
        } else {
            request.settle(JobStoreError.closed)
        }
    }

    /// The polling of the event loop whose thread submits, or `nil` off any loop (a virtual-time
    /// scheduler, a plain thread).
    private func pollingOfCurrentLoop() -> SQLiteLoopPolling? {
        guard SQLiteLoopPolling.budgetNanoseconds > 0, let loop = Scheduler.executing?.eventLoop else { return nil }
        return loopPollings.withLock { pollings in
            if let polling = pollings[ObjectIdentifier(loop)] { return polling }
            let polling = SQLiteLoopPolling(loop: loop)
            pollings[ObjectIdentifier(loop)] = polling
            return polling
        }
    }

    /// Stops taking requests; those already queued still run. The connection closes after the last
    /// one, and then `whenClosed` is called (at once if it has already closed).
    func close(whenClosed: @escaping @Sendable () -> Void = {}) {
        if usesWriterThread {
            let (wakes, hasClosed) = queue.withLock { queue in
                defer { queue.isClosed = true }
                if !queue.hasClosedConnection { queue.whenClosed.append(whenClosed) }
                hasWork.store(true, ordering: .releasing)
                return (!queue.isClosed && queue.wakesWriter(), queue.hasClosedConnection)
            }
            if wakes { wakeWriter.signal() }
            if hasClosed { whenClosed() }
        } else {
            _ = connection.withLock { $0.take() }
            whenClosed()
        }
    }

    // MARK: Observers

    func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable {
        let key = observers.withLock { observers in
            defer { observers.next += 1 }
            observers.byKey[observers.next] = observer
            return observers.next
        }
        return Disposer { [weak self] in
            _ = self?.observers.withLock { $0.byKey.removeValue(forKey: key) }
        }
    }

    /// Publishes notifications of a commit made outside the writer.
    func publishNow(_ notifications: [JobStoreNotification]) {
        publish(notifications)
    }

    /// Keeps the database's current `PRAGMA data_version`, against which later checks compare.
    func recordDataVersion() {
        connection.withLock { connection in
            let version = try? connection?.query("PRAGMA data_version").first?.first?.integerValue
            dataVersion.withLock { $0 = version }
        }
    }

    /// Called when the database's files changed: checks whether another connection committed (on the
    /// writer thread, or at once with ``SQLiteJobStore/Execution/callingThread``).
    func databaseFilesChanged() {
        guard usesWriterThread else {
            checkForOtherCommits()
            return
        }
        // One pending check covers every change before it runs.
        guard !needsCommitCheck.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let wakes = queue.withLock { queue in
            hasWork.store(true, ordering: .releasing)
            return queue.wakesWriter()
        }
        if wakes { wakeWriter.signal() }
    }

    /// When another connection committed since the last check, publishes the queues that have
    /// claimable jobs as enqueued, so that this process's workers claim, then that another
    /// connection committed, so that those waiting on a job's end read it again.
    private func checkForOtherCommits() {
        let queues = connection.withLock { connection -> Set<String>? in
            guard let connection,
                let version = try? connection.query("PRAGMA data_version").first?.first?.integerValue
            else { return nil }
            let changed = dataVersion.withLock { recorded in
                defer { recorded = version }
                return recorded != version
            }
            guard changed else { return nil }
            let rows = try? connection.query(
                "SELECT DISTINCT queue FROM flow_jobs WHERE state IN \(SQLiteJobStore.claimableStates)")
            return Set((rows ?? []).compactMap { $0.first?.textValue })
        }
        guard let queues else { return }
        publish(queues.isEmpty ? [.committedElsewhere] : [.enqueued(queues: queues), .committedElsewhere])
    }

    private func publish(_ notifications: [JobStoreNotification]) {
        guard !notifications.isEmpty else { return }
        // In the order the observers came.
        let current = observers.withLock { $0.byKey.sorted { $0.key < $1.key }.map(\.value) }
        for notification in notifications {
            for observer in current { observer(notification) }
        }
    }

    // MARK: Running batches

    /// How long the writer thread looks for the next request after a batch before it sleeps: about
    /// the time a caller that awaits each request takes to see its result and submit the next, which
    /// then finds the thread awake instead of paying for a wake-up.
    static let spinNanoseconds: UInt64 = 50_000

    private func runWriterThread() {
        var spinPolicy = SQLiteSpinPolicy(budgetNanoseconds: Self.spinNanoseconds)
        var ranBatch = false
        while true {
            if !(ranBatch && spinsUntilWork(&spinPolicy)) {
                let sleeps = queue.withLock { queue in
                    // Once closed, nothing wakes it again: a close that came while it ran its last
                    // batch is seen by the next turn instead.
                    guard !hasWork.load(ordering: .acquiring) && !queue.isClosed else { return false }
                    queue.isWriterSleeping = true
                    return true
                }
                if sleeps { wakeWriter.wait() }
            }
            if needsCommitCheck.exchange(false, ordering: .acquiringAndReleasing) { checkForOtherCommits() }
            let (batch, isClosed) = queue.withLock { queue in
                hasWork.store(false, ordering: .relaxed)
                defer { queue.requests.removeAll(keepingCapacity: true) }
                return (queue.requests, queue.isClosed)
            }
            ranBatch = !batch.isEmpty
            if !batch.isEmpty { runBatch(batch) }
            if isClosed && batch.isEmpty {
                _ = connection.withLock { $0.take() }
                let waiting = queue.withLock { queue in
                    queue.hasClosedConnection = true
                    defer { queue.whenClosed.removeAll() }
                    return queue.whenClosed
                }
                for body in waiting { body() }
                return
            }
        }
    }

    /// Looks for new work for up to ``spinNanoseconds``, yielding the core between looks, unless
    /// `policy` finds the machine has no core to spare; true when some came.
    private func spinsUntilWork(_ policy: inout SQLiteSpinPolicy) -> Bool {
        var before = EventLoop.uptimeNanoseconds
        guard policy.maySpin(at: before) else { return false }
        let end = before + policy.budgetNanoseconds
        while !hasWork.load(ordering: .acquiring) {
            guard before < end else {
                policy.spinEndedUncontended()
                return false
            }
            sched_yield()
            let after = EventLoop.uptimeNanoseconds
            let came = hasWork.load(ordering: .acquiring)
            guard policy.yielded(from: before, to: after, awaitedCame: came) else { return came }
            if came { break }
            before = after
        }
        policy.spinEndedUncontended()
        return true
    }

    /// Runs `batch` in one transaction, then settles its requests and publishes their notifications.
    private func runBatch(_ batch: [Request]) {
        // (request, its error, its notifications), filled under the connection's lock.
        let outcomes = connection.withLock { connection -> [((any Error)?, [JobStoreNotification])] in
            guard let connection else { return batch.map { _ in (JobStoreError.closed, []) } }
            return runTransaction(batch, on: connection)
        }
        // The batch's enqueues as one notification: observers (workers) claim once per commit.
        var enqueuedQueues: Set<String> = []
        var notifications: [JobStoreNotification] = []
        for (request, outcome) in zip(batch, outcomes) {
            for notification in outcome.1 {
                if case .enqueued(let queues) = notification {
                    enqueuedQueues.formUnion(queues)
                } else {
                    notifications.append(notification)
                }
            }
            request.settle(outcome.0)
        }
        if !enqueuedQueues.isEmpty { notifications.insert(.enqueued(queues: enqueuedQueues), at: 0) }
        publish(notifications)
        // After the notifications too: a loop that polls for its requests' results also sees the
        // observers' wake-ups they caused (a worker's claim of the job just enqueued) without sleeping.
        for request in batch { request.polling?.requestSettled() }
        checkpointIfTheLogRanAway()
    }

    /// Copies the write-ahead log into the database from the writer's own connection once the log
    /// has passed ``SQLiteCheckpointer/writerCatchUpPages``: the checkpointer beside the writer
    /// cannot catch up with a writer that never pauses, and the log only starts over once a
    /// checkpoint has copied all of it. Runs after the batch's requests were settled, so they do not
    /// wait for it.
    private func checkpointIfTheLogRanAway() {
        connection.withLock { connection in
            guard let connection, connection.walPages >= SQLiteCheckpointer.writerCatchUpPages else { return }
            connection.walPages = 0
            // Passive: never waits for a lock (the checkpointer's own checkpoint holds one); a later
            // batch tries again while the log stays long.
            _ = sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        }
    }

    private func runTransaction(
        _ batch: [Request], on connection: SQLiteConnection
    ) -> [((any Error)?, [JobStoreNotification])] {
        do {
            try withBusyRetry { () throws(JobStoreError) in try connection.execute("BEGIN IMMEDIATE") }
        } catch {
            return batch.map { _ in (error, []) }
        }
        var outcomes: [((any Error)?, [JobStoreNotification])] = []
        outcomes.reserveCapacity(batch.count)
        // A request alone in its transaction needs no savepoint (which journals every page it
        // changes): when it fails, the whole transaction rolls back.
        let isAlone = batch.count == 1
        do {
            for (index, request) in batch.enumerated() {
                connection.pendingNotifications.removeAll()
                if !isAlone { try connection.execute("SAVEPOINT request") }
                do {
                    try request.run(connection)
                    if !isAlone { try connection.execute("RELEASE request") }
                    outcomes.append((nil, connection.pendingNotifications))
                } catch {
                    if isAlone {
                        if connection.isInTransaction { try? connection.run("ROLLBACK") }
                        connection.pendingNotifications.removeAll()
                        return [(error, [])]
                    }
                    guard connection.isInTransaction else {
                        // SQLite rolled the whole transaction back (it may on a full disk or an I/O
                        // error), the other requests' work with it: this request fails with its
                        // error, and the others run again in a transaction of their own.
                        connection.pendingNotifications.removeAll()
                        var others = batch
                        others.remove(at: index)
                        var rerun = runTransaction(others, on: connection)
                        rerun.insert((error, []), at: index)
                        return rerun
                    }
                    try connection.run("ROLLBACK TO request; RELEASE request")
                    outcomes.append((error, []))
                }
            }
            connection.pendingNotifications.removeAll()
            try withBusyRetry { () throws(JobStoreError) in try connection.execute("COMMIT") }
            return outcomes
        } catch {
            try? connection.run("ROLLBACK")
            connection.pendingNotifications.removeAll()
            return batch.map { _ in (error, []) }
        }
    }

    /// Runs `body`, retrying it with the backoff while another connection holds the lock it needs.
    func withBusyRetry(_ body: () throws(JobStoreError) -> Void) throws(JobStoreError) {
        try Self.withBusyRetry(limit: busyRetryLimit, backoff: busyBackoff, onRetry: onBusyRetry, body)
    }

    static func withBusyRetry(
        limit: Int, backoff: Backoff, onRetry: (@Sendable (Int) -> Void)?, _ body: () throws(JobStoreError) -> Void
    ) throws(JobStoreError) {
        var retry = 0
        while true {
            do throws(JobStoreError) {
                try body()
                return
            } catch .busy(let message) {
                retry += 1
                guard retry <= limit else { throw .busy(message: message) }
                onRetry?(retry)
                let delay = backoff.delay(forAttempt: retry)
                if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            }
        }
    }
}
