import CSQLite
import Flow
import FlowTimers
import Foundation
import Synchronization

/// A ``JobStore`` in an SQLite database: a file, or memory for tests. No server, and jobs survive a
/// kill -9 of the process once their enqueue's future has completed.
///
/// ```swift
/// let store = try SQLiteJobStore(path: "/var/lib/app/jobs.sqlite")
/// let client = JobClient(store: store)
/// ```
///
/// - The database runs in WAL mode with `synchronous=NORMAL`: a commit survives the process's crash;
///   the last commits before a power loss may be lost.
/// - One writer: every change runs on the store's writer (a thread of its own by default), which
///   commits everything queued meanwhile in one transaction, so that many enqueues share one disk
///   write. No sqlite3 call runs on the caller's thread, and futures complete once the transaction
///   has committed.
/// - Readers beside it: ``job(_:)``, ``jobs(state:queue:limit:)`` and ``counts(queue:)`` of a file
///   store run on a read connection of their own, so they never wait behind the writer's
///   transactions; they see the last commit. (A store in memory has one connection, and reads there
///   go through the writer.)
/// - Opening runs the schema's migrations; a database written by a newer FlowJobs is refused with
///   ``JobStoreError/newerSchema(found:supported:)``.
/// - Other processes may open the same file: while one holds the write lock, the others retry with a
///   backoff, then fail with ``JobStoreError/busy(message:)``.
public final class SQLiteJobStore: JobStore {
    /// Where the store's blocking sqlite3 calls run.
    public enum Execution: Sendable, Hashable {
        /// On a thread the store starts and owns (the default): callers never block.
        case writerThread
        /// On the thread that calls the store, at once: for tests on a virtual clock, where every
        /// future must be complete when the call returns. It blocks that thread for the duration of
        /// the call, so never use it on a loop that serves other work.
        case callingThread
    }

    /// How a store is opened.
    public struct Configuration: Sendable {
        /// The clock for run times and leases; the system's wall clock by default.
        public var clock: JobClock
        /// Where sqlite3 calls run; the store's own thread by default.
        public var execution: Execution
        /// Whether a missing database file is created; true by default.
        public var createsMissingFile: Bool
        /// How many times a lock held by another connection is waited out before failing; 100 by default.
        public var busyRetryLimit: Int
        /// How long to wait before each retry of a locked database.
        public var busyBackoff: Backoff
        /// Called on the writer before each wait for a locked database, with the retry's number.
        public var onBusyRetry: (@Sendable (Int) -> Void)?

        /// Describes how to open a store.
        ///
        /// - Parameters:
        ///   - clock: the clock for run times and leases.
        ///   - execution: where sqlite3 calls run.
        ///   - createsMissingFile: whether a missing database file is created.
        ///   - busyRetryLimit: retries of a locked database before failing.
        ///   - busyBackoff: the wait before each retry (1 ms doubling to 50 ms, jittered, by default).
        ///   - onBusyRetry: called before each wait for a locked database.
        public init(
            clock: JobClock = .system,
            execution: Execution = .writerThread,
            createsMissingFile: Bool = true,
            busyRetryLimit: Int = 100,
            busyBackoff: Backoff = .exponential(initial: 0.001, maximum: 0.05, jitter: .equal),
            onBusyRetry: (@Sendable (Int) -> Void)? = nil
        ) {
            self.clock = clock
            self.execution = execution
            self.createsMissingFile = createsMissingFile
            self.busyRetryLimit = busyRetryLimit
            self.busyBackoff = busyBackoff
            self.onBusyRetry = onBusyRetry
        }
    }

    /// The clock for run times and leases.
    public let clock: JobClock
    /// The database file's path, or `:memory:`.
    public let path: String
    let writer: SQLiteWriter
    /// The read connection of a file store; `nil` in memory, where reads go through the writer.
    private let reader: SQLiteReader?
    /// The checkpoints of a file store whose writer has a thread of its own, beside that thread.
    private let checkpointer: SQLiteCheckpointer?
    /// The watch of a file store's files for other connections' commits, from the first observer on
    /// (`started`), until the store closes.
    private let fileWatch = Locked<(started: Bool, watcher: SQLiteFileWatcher?)>((false, nil))

    /// Opens the database at `path`, creating it and its tables when missing, and migrating an older
    /// schema. Blocks the calling thread while it opens and migrates.
    ///
    /// - Throws: ``JobStoreError`` when the file cannot be opened or created (a missing directory),
    ///   is read-only, is not a database or is damaged, stays locked, or has a newer schema.
    public init(path: String, configuration: Configuration = Configuration()) throws(JobStoreError) {
        let connection = try SQLiteConnection(path: path, create: configuration.createsMissingFile)
        // WAL: readers never block the writer; NORMAL: a commit survives a crash of the process.
        try SQLiteWriter.withBusyRetry(
            limit: configuration.busyRetryLimit, backoff: configuration.busyBackoff,
            onRetry: configuration.onBusyRetry
        ) { () throws(JobStoreError) in
            try connection.run("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        }
        // Each request runs in a savepoint, whose journal of the pages it changed spills to a
        // temporary file past 64 KiB (a batch of enqueues does): kept in memory, it costs no writes.
        try connection.run("PRAGMA temp_store = MEMORY")
        try SQLiteSchema.migrate(
            connection, busyRetryLimit: configuration.busyRetryLimit, busyBackoff: configuration.busyBackoff,
            onBusyRetry: configuration.onBusyRetry)
        if path == ":memory:" || path.isEmpty {
            reader = nil
            checkpointer = nil
        } else {
            let readConnection = try SQLiteConnection(path: path, create: false)
            try readConnection.run("PRAGMA query_only = 1")
            reader = SQLiteReader(
                connection: readConnection, usesOwnQueue: configuration.execution == .writerThread,
                busyRetryLimit: configuration.busyRetryLimit, busyBackoff: configuration.busyBackoff)
            if configuration.execution == .writerThread {
                let checkpointConnection = try SQLiteConnection(path: path, create: false)
                try checkpointConnection.run("PRAGMA synchronous = NORMAL")
                let checkpointer = SQLiteCheckpointer(connection: checkpointConnection)
                connection.checkpointElsewhere { pages in checkpointer.walDidGrow(toPages: pages) }
                self.checkpointer = checkpointer
            } else {
                // Every call runs on the caller's thread anyway: SQLite's automatic checkpoint stays.
                checkpointer = nil
            }
        }
        clock = configuration.clock
        self.path = path
        writer = SQLiteWriter(
            connection: connection, usesWriterThread: configuration.execution == .writerThread,
            busyRetryLimit: configuration.busyRetryLimit, busyBackoff: configuration.busyBackoff,
            onBusyRetry: configuration.onBusyRetry)
    }

    /// Opens a store in memory: it lasts as long as this object, for tests and examples.
    ///
    /// ```swift
    /// let store = try SQLiteJobStore.inMemory()
    /// ```
    public static func inMemory(configuration: Configuration = Configuration()) throws(JobStoreError) -> SQLiteJobStore {
        try SQLiteJobStore(path: ":memory:", configuration: configuration)
    }

    deinit {
        fileWatch.withLock { $0.watcher }?.stop()
        writer.close()
        reader?.close()
        checkpointer?.close()
    }

    /// Stops taking operations (later ones fail with ``JobStoreError/closed``); those already
    /// submitted still complete, then the database closes. The future completes once it has closed
    /// (its file descriptors with it).
    @discardableResult
    public func close() -> Future<Void> {
        fileWatch.withLock { watch in
            watch.started = true
            return watch.watcher
        }?.stop()
        return Future<Void>(on: .none) { [writer, reader, checkpointer] completion in
            writer.close {
                // The checkpointer's connection closes last: the last connection to close copies the
                // log into the database and removes it.
                let closeCheckpointer: @Sendable () -> Void = {
                    if let checkpointer {
                        checkpointer.close { completion(.success(())) }
                    } else {
                        completion(.success(()))
                    }
                }
                if let reader {
                    reader.close(whenClosed: closeCheckpointer)
                } else {
                    closeCheckpointer()
                }
            }
            return NilDisposer()
        }
    }

    // MARK: JobStore

    /// Adds jobs in one transaction; see ``JobStore/enqueue(_:)``.
    public func enqueue(_ jobs: [NewJob]) -> Future<[EnqueuedJob]> {
        let clock = clock
        return writer.submit { connection in
            let now = clock.now().milliseconds
            return try jobs.map { job throws(JobStoreError) in try Self.insert(job, now: now, on: connection) }
        }
    }

    /// Rescues expired leases and claims due jobs; see ``JobStore/claim(_:)``.
    public func claim(_ request: ClaimRequest) -> Future<ClaimResult> {
        let clock = clock
        return writer.submit { connection in try Self.claim(request, now: clock.now().milliseconds, on: connection) }
    }

    /// Extends a running job's lease; see ``JobStore/heartbeat(_:leaseDuration:)``.
    public func heartbeat(_ lease: JobLease, leaseDuration: Duration) -> Future<HeartbeatResult> {
        let clock = clock
        return writer.submit { connection in
            let expiresAt = clock.now().milliseconds + leaseDuration.milliseconds
            let rows = try connection.query(
                "UPDATE flow_jobs SET lease_expires_at = ? WHERE id = ? AND fence = ? AND state = 'running' "
                    + "RETURNING cancel_requested",
                [.integer(expiresAt), .integer(lease.id.rawValue), .integer(lease.fence)])
            guard let row = rows.first else { throw JobStoreError.leaseLost(lease) }
            return HeartbeatResult(
                leaseExpiresAt: Date(milliseconds: expiresAt), isCancellationRequested: row[0].integerValue == 1)
        }
    }

    /// Ends an attempt, with `effects` in the same transaction; see ``JobStore/finish(_:outcome:effects:)``.
    public func finish(
        _ lease: JobLease, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) -> Future<JobRecord> {
        let clock = clock
        return writer.submit { connection in
            let now = clock.now().milliseconds
            let record = try Self.runningRecord(lease, on: connection)
            if let effects { try effects(SQLiteTransaction(connection: connection, now: now)) }
            let (lifecycle, runAt, lastError) = try outcome.applied(to: record)
            return try Self.store(
                lifecycle, of: record, runAt: runAt.milliseconds, lastError: lastError, worker: record.worker, now: now,
                on: connection)
        }
    }

    /// Gives a running job back; see ``JobStore/release(_:)``.
    public func release(_ lease: JobLease) -> Future<Void> {
        let clock = clock
        return writer.submit { connection in
            let now = clock.now().milliseconds
            let record = try Self.runningRecord(lease, on: connection)
            var lifecycle = record.lifecycle
            try lifecycle.apply(.released)
            _ = try Self.store(
                lifecycle, of: record, runAt: now, lastError: record.lastError, worker: record.worker, now: now,
                on: connection)
            connection.pendingNotifications.append(.enqueued(queues: [record.queue]))
        }
    }

    /// Keeps the first attempt's trace context; see ``JobStore/recordFirstAttemptTrace(_:traceContext:)``.
    @discardableResult
    public func recordFirstAttemptTrace(_ lease: JobLease, traceContext: [String: String]) -> Future<Void> {
        writer.submit { connection in
            let changed = try connection.execute(
                "UPDATE flow_jobs SET first_attempt_trace_context = ? WHERE id = ? AND fence = ? AND state = 'running'",
                [StoredJobRow.encodeTraceContext(traceContext), .integer(lease.id.rawValue), .integer(lease.fence)])
            guard changed == 1 else { throw JobStoreError.leaseLost(lease) }
        }
    }

    /// Cancels a queued job or asks a running one to stop; see ``JobStore/cancel(_:)``.
    public func cancel(_ id: JobID) -> Future<JobCancellation> {
        let clock = clock
        return writer.submit { connection in
            guard let record = try Self.record(id, on: connection) else { return .notFound }
            if record.state.isTerminal { return .alreadyFinished(record.state) }
            var lifecycle = record.lifecycle
            try lifecycle.apply(.cancellationRequested)
            _ = try Self.store(
                lifecycle, of: record, runAt: record.runAt.milliseconds, lastError: record.lastError,
                worker: record.worker, now: clock.now().milliseconds, on: connection)
            if lifecycle.state == .cancelled { return .cancelled }
            connection.pendingNotifications.append(.cancellationRequested(id))
            return .requested
        }
    }

    /// Sets or removes a queue's limit across every worker; see
    /// ``JobStore/setConcurrencyLimit(_:forQueue:)``.
    @discardableResult
    public func setConcurrencyLimit(_ maxRunning: Int?, forQueue queue: String) -> Future<Void> {
        misusePrecondition(
            maxRunning.map { $0 >= 1 } ?? true,
            "setConcurrencyLimit(_:forQueue:): the limit must be at least 1, or nil for none, not \(maxRunning ?? 0)")
        return writer.submit { connection in
            if let maxRunning {
                try connection.execute(
                    "INSERT INTO flow_queues (name, max_running) VALUES (?, ?) "
                        + "ON CONFLICT (name) DO UPDATE SET max_running = excluded.max_running",
                    [.text(queue), .integer(Int64(maxRunning))])
            } else {
                try connection.execute("DELETE FROM flow_queues WHERE name = ?", [.text(queue)])
            }
            // Workers waiting on the old limit may claim now.
            connection.pendingNotifications.append(.enqueued(queues: [queue]))
        }
    }

    /// The job's record; see ``JobStore/job(_:)``.
    public func job(_ id: JobID) -> Future<JobRecord?> {
        read { connection throws(JobStoreError) in try Self.record(id, on: connection) }
    }

    /// Records filtered by state and queue; see ``JobStore/jobs(state:queue:limit:)``.
    public func jobs(state: JobState?, queue: String?, limit: Int) -> Future<[JobRecord]> {
        read { connection throws(JobStoreError) in
            var conditions: [String] = []
            var arguments: [SQLValue] = []
            if let state {
                conditions.append("state = ?")
                arguments.append(.text(state.rawValue))
            }
            if let queue {
                conditions.append("queue = ?")
                arguments.append(.text(queue))
            }
            let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            arguments.append(.integer(Int64(max(0, limit))))
            return try connection.query(
                "SELECT \(SQLiteSchema.jobColumns) FROM flow_jobs \(filter) ORDER BY id LIMIT ?", arguments
            ).map(StoredJobRow.record)
        }
    }

    /// How many jobs are in each state, in every queue or in `queue`; states with no job are left out.
    /// Runs on the read connection, beside the writer.
    ///
    /// ```swift
    /// let waiting = try await store.counts(queue: "default").get()[.available, default: 0]
    /// ```
    public func counts(queue: String? = nil) -> Future<[JobState: Int]> {
        read { connection throws(JobStoreError) in
            let rows = try connection.query(
                "SELECT state, COUNT(*) FROM flow_jobs WHERE ? IS NULL OR queue = ? GROUP BY state",
                [queue.map(SQLValue.text) ?? .null, queue.map(SQLValue.text) ?? .null])
            var counts: [JobState: Int] = [:]
            for row in rows {
                guard let state = row[0].textValue.flatMap(JobState.init(rawValue:)) else { continue }
                counts[state] = Int(row[1].integerValue ?? 0)
            }
            return counts
        }
    }

    /// Runs a read on the read connection, or on the writer when the store has none (in memory).
    private func read<Value: Sendable>(
        _ work: @escaping @Sendable (SQLiteConnection) throws(JobStoreError) -> Value
    ) -> Future<Value> {
        if let reader { return reader.read(work) }
        return writer.submit { connection in try work(connection) }
    }

    /// Runs `body` in one transaction of the store's writer; see ``JobStore/transaction(_:)``.
    ///
    /// `body` may run a second time when SQLite rolled back the commit it shared with another request
    /// (that request met a full disk, say): keep it to the transaction's own reads and writes.
    ///
    /// ```swift
    /// store.transaction { transaction in
    ///     try transaction.execute("INSERT INTO orders(id) VALUES (?)", [.integer(7)])
    ///     try transaction.enqueue(NewJob(name: "ship", queue: "default", payload: Data(), maxAttempts: 5))
    /// }
    /// ```
    @discardableResult
    public func transaction<Value: Sendable>(
        _ body: @escaping @Sendable (any JobTransaction) throws -> Value
    ) -> Future<Value> {
        let clock = clock
        return writer.submit { connection in
            try body(SQLiteTransaction(connection: connection, now: clock.now().milliseconds))
        }
    }

    /// Enqueues a job through your own SQLite connection to the same database file, inside the
    /// transaction you have open on it: the job exists if and only if your transaction commits.
    ///
    /// ```swift
    /// sqlite3_exec(db, "BEGIN IMMEDIATE", nil, nil, nil)
    /// // … your own writes …
    /// let job = try store.enqueue(shipOrder.newJob(order, clock: store.clock), inTransactionOf: db)
    /// sqlite3_exec(db, "COMMIT", nil, nil, nil)
    /// store.didCommitEnqueues(inQueues: ["default"])   // wakes this process's workers at once
    /// ```
    ///
    /// The connection must be opened with the SQLite this store links (the system's libsqlite3), on
    /// this store's database, and be inside a transaction (a misuse stops the program with a message). Workers
    /// hear of the commit through the store's watch of its files (see ``observe(_:)``); call
    /// ``didCommitEnqueues(inQueues:)`` to wake this process's workers without that hop. Runs on the
    /// calling thread.
    ///
    /// - Parameters:
    ///   - job: the job, as ``JobKind/newJob(_:options:clock:)`` describes it.
    ///   - connection: your `sqlite3 *`, with a transaction open.
    /// - Returns: the job's identifier, or the unfinished job with the same unique key.
    @discardableResult
    public func enqueue(_ job: NewJob, inTransactionOf connection: OpaquePointer) throws -> EnqueuedJob {
        misusePrecondition(
            sqlite3_get_autocommit(connection) == 0,
            "SQLiteJobStore.enqueue(_:inTransactionOf:): the connection has no open transaction; BEGIN one first")
        let borrowed = SQLiteConnection(borrowing: connection)
        return try Self.insert(job, now: clock.now().milliseconds, on: borrowed)
    }

    /// Tells this process's workers that jobs were committed to `queues` through another connection
    /// (``enqueue(_:inTransactionOf:)``), so that they claim at once.
    public func didCommitEnqueues(inQueues queues: Set<String>) {
        writer.publishNow([.enqueued(queues: queues)])
    }

    /// Calls `observer` after commits in this process; see ``JobStore/observe(_:)``.
    ///
    /// A file store also hears of other processes' commits, without polling: from the first observer
    /// on, it watches the database and its `-wal` file (inotify, on a thread of its own that sleeps
    /// until they are written), and after each burst of writes compares SQLite's `PRAGMA data_version`,
    /// which only another connection's commit changes. When it changed, the queues with claimable jobs
    /// are published as enqueued, so that idle workers claim at once.
    public func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable {
        let observation = writer.observe(observer)
        if reader != nil { watchOtherConnections() }
        return observation
    }

    private func watchOtherConnections() {
        let path = path
        fileWatch.withLock { [writer] watch in
            guard !watch.started else { return }
            watch.started = true
            watch.watcher = SQLiteFileWatcher(paths: [path + "-wal", path]) { writer.databaseFilesChanged() }
            // After the watch starts: a commit between the two is caught by the caller's first claim.
            writer.recordDataVersion()
        }
    }

    // MARK: SQL

    static let unfinishedStates = "('scheduled', 'available', 'running', 'retryable')"
    static let claimableStates = "('scheduled', 'available', 'retryable')"

    static func insert(_ job: NewJob, now: Int64, on connection: SQLiteConnection) throws(JobStoreError) -> EnqueuedJob {
        misusePrecondition(job.maxAttempts >= 1, "enqueue: maxAttempts must be at least 1, not \(job.maxAttempts)")
        if let key = job.uniqueKey,
            let row = try connection.query(
                "SELECT id, state FROM flow_jobs WHERE unique_key = ? AND state IN \(unfinishedStates)",
                [.text(key)]
            ).first
        {
            return EnqueuedJob(
                id: JobID(rawValue: row[0].integerValue ?? 0), isDuplicate: true,
                state: JobState(rawValue: row[1].textValue ?? "") ?? .available)
        }
        let runAt = job.runAt?.milliseconds ?? now
        let lifecycle = JobLifecycle(isDue: runAt <= now, maxAttempts: job.maxAttempts)
        let id = try connection.insertRow(
            """
            INSERT INTO flow_jobs (
                name, queue, payload, state, priority, run_at, max_attempts, unique_key, created_at, trace_context,
                timeout_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(job.name), .text(job.queue), .blob(job.payload), .text(lifecycle.state.rawValue),
                .integer(Int64(job.priority)), .integer(runAt), .integer(Int64(job.maxAttempts)),
                job.uniqueKey.map(SQLValue.text) ?? .null, .integer(now), StoredJobRow.encodeTraceContext(job.traceContext),
                job.timeout.map { .integer($0.milliseconds) } ?? .null,
            ])
        // One notification for a run of enqueues to a queue (a batch of a thousand is one, not a thousand).
        if case .enqueued(let queues)? = connection.pendingNotifications.last, queues.contains(job.queue) {
        } else {
            connection.pendingNotifications.append(.enqueued(queues: [job.queue]))
        }
        return EnqueuedJob(id: JobID(rawValue: id), isDuplicate: false, state: lifecycle.state)
    }

    static func claim(_ request: ClaimRequest, now: Int64, on connection: SQLiteConnection) throws -> ClaimResult {
        // Rescue: a lease that ended is an attempt that ended, as JobLifecycle's leaseExpired says.
        let expired = try connection.query(
            "SELECT \(SQLiteSchema.jobColumns) FROM flow_jobs WHERE state = 'running' AND lease_expires_at <= ?",
            [.integer(now)]
        ).map(StoredJobRow.record)
        var rescued: [JobRecord] = []
        for record in expired {
            var lifecycle = record.lifecycle
            try lifecycle.apply(.leaseExpired(maxLeaseExpiries: request.maxLeaseExpiries))
            // The job keeps its run time, and with it its place among the due jobs: it runs again
            // as soon as a slot frees, not behind every job that came due while its lease lasted.
            rescued.append(try store(
                lifecycle, of: record, runAt: record.runAt.milliseconds, lastError: record.lastError, worker: record.worker, now: now,
                on: connection))
        }

        let names = request.names.sorted()
        let nameList = "(" + names.map { _ in "?" }.joined(separator: ", ") + ")"
        let nameArguments = names.map(SQLValue.text)
        var claimed: [JobRecord] = []
        var queuesWithFreeSlots: [String] = []
        let leaseEnd = now + request.leaseDuration.milliseconds
        for (queue, wanted) in request.slotsByQueue.sorted(by: { $0.key < $1.key }) where wanted > 0 {
            guard !names.isEmpty else { break }
            // A queue's limit across every worker of the database, kept in the store.
            var slots = wanted
            if let limit = try connection.query(
                "SELECT max_running FROM flow_queues WHERE name = ?", [.text(queue)]
            ).first?.first?.integerValue {
                let running = try connection.query(
                    "SELECT COUNT(*) FROM flow_jobs WHERE queue = ? AND state = 'running'", [.text(queue)]
                ).first?.first?.integerValue ?? 0
                slots = min(wanted, Int(max(0, limit - running)))
                // A queue held back by its global limit is not waited on by time: a finish frees it.
                guard slots > 0 else { continue }
            }
            // The update mirrors JobLifecycle's `claimed`: attempt and fence up by one, running.
            let rows = try connection.query(
                """
                UPDATE flow_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
                    lease_expires_at = ?, worker = ?
                WHERE id IN (
                    SELECT id FROM flow_jobs
                    WHERE queue = ? AND state IN \(claimableStates) AND run_at <= ? AND name IN \(nameList)
                    ORDER BY priority DESC, run_at, id LIMIT ?)
                RETURNING \(SQLiteSchema.jobColumns)
                """,
                [.integer(leaseEnd), .text(request.worker), .text(queue), .integer(now + request.lookahead.milliseconds)]
                    + nameArguments
                    + [.integer(Int64(slots))])
            claimed += rows.map(StoredJobRow.record)
            if rows.count < slots { queuesWithFreeSlots.append(queue) }
        }
        claimed.sort { ($1.priority, $0.runAt, $0.id) < ($0.priority, $1.runAt, $1.id) }

        var wakeTimes: [Int64] = []
        if !queuesWithFreeSlots.isEmpty && !names.isEmpty {
            let queueList = "(" + queuesWithFreeSlots.map { _ in "?" }.joined(separator: ", ") + ")"
            let rows = try connection.query(
                """
                SELECT MIN(run_at) FROM flow_jobs
                WHERE state IN \(claimableStates) AND queue IN \(queueList) AND name IN \(nameList)
                """,
                queuesWithFreeSlots.map(SQLValue.text) + nameArguments)
            if let time = rows.first?.first?.integerValue { wakeTimes.append(time) }
        }
        // Other workers' leases: when one ends, its job is rescued by the next claim.
        let leaseRows = try connection.query(
            "SELECT MIN(lease_expires_at) FROM flow_jobs WHERE state = 'running' AND worker IS NOT ?",
            [.text(request.worker)])
        if let time = leaseRows.first?.first?.integerValue { wakeTimes.append(time) }
        var measured: [String: QueueMeasurement] = [:]
        if request.measuresQueues && !request.slotsByQueue.isEmpty {
            let queues = request.slotsByQueue.keys.sorted()
            for queue in queues { measured[queue] = QueueMeasurement(dueCount: 0, oldestDueAt: nil) }
            let queueList = "(" + queues.map { _ in "?" }.joined(separator: ", ") + ")"
            let rows = try connection.query(
                """
                SELECT queue, COUNT(*), MIN(run_at) FROM flow_jobs
                WHERE queue IN \(queueList) AND state IN \(claimableStates) AND run_at <= ? GROUP BY queue
                """,
                queues.map(SQLValue.text) + [.integer(now)])
            for row in rows {
                guard let queue = row[0].textValue else { continue }
                measured[queue] = QueueMeasurement(
                    dueCount: Int(row[1].integerValue ?? 0), oldestDueAt: row[2].integerValue.map(Date.init(milliseconds:)))
            }
        }
        return ClaimResult(
            jobs: claimed, nextWakeAt: wakeTimes.min().map(Date.init(milliseconds:)), rescued: rescued, queues: measured)
    }

    /// The job's record when it is running under `lease`'s fence, else ``JobStoreError/leaseLost(_:)``.
    static func runningRecord(_ lease: JobLease, on connection: SQLiteConnection) throws(JobStoreError) -> JobRecord {
        guard let record = try record(lease.id, on: connection), record.state == .running,
            record.fence == lease.fence
        else { throw .leaseLost(lease) }
        return record
    }

    static func record(_ id: JobID, on connection: SQLiteConnection) throws(JobStoreError) -> JobRecord? {
        try connection.query(
            "SELECT \(SQLiteSchema.jobColumns) FROM flow_jobs WHERE id = ?", [.integer(id.rawValue)]
        ).first.map(StoredJobRow.record)
    }

    /// Writes `lifecycle` (and the fields that go with it) over `record`'s row; publishes a terminal state.
    static func store(
        _ lifecycle: JobLifecycle, of record: JobRecord, runAt: Int64, lastError: String?, worker: String?,
        now: Int64, on connection: SQLiteConnection
    ) throws(JobStoreError) -> JobRecord {
        let isRunning = lifecycle.state == .running
        let finishedAt: Int64? = lifecycle.state.isTerminal ? now : nil
        let rows = try connection.query(
            """
            UPDATE flow_jobs SET state = ?, attempt = ?, fence = ?, lease_expiries = ?, has_error = ?,
                cancel_requested = ?, run_at = ?, last_error = ?, worker = ?, finished_at = ?,
                lease_expires_at = CASE WHEN ? THEN lease_expires_at ELSE NULL END
            WHERE id = ? RETURNING \(SQLiteSchema.jobColumns)
            """,
            [
                .text(lifecycle.state.rawValue), .integer(Int64(lifecycle.attempt)), .integer(lifecycle.fence),
                .integer(Int64(lifecycle.leaseExpiries)), .integer(lifecycle.hasRecordedError ? 1 : 0),
                .integer(lifecycle.isCancellationRequested ? 1 : 0), .integer(runAt),
                lastError.map(SQLValue.text) ?? .null, worker.map(SQLValue.text) ?? .null,
                finishedAt.map(SQLValue.integer) ?? .null, .integer(isRunning ? 1 : 0), .integer(record.id.rawValue),
            ])
        guard let row = rows.first else { throw .database(code: SQLITE_NOTFOUND, message: "job \(record.id) vanished") }
        let stored = StoredJobRow.record(row)
        if stored.state.isTerminal { connection.pendingNotifications.append(.finished(stored)) }
        return stored
    }
}

/// The transaction a job's effects or a caller's own writes run in.
struct SQLiteTransaction: JobTransaction {
    let connection: SQLiteConnection
    let now: Int64

    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        try connection.execute(sql, arguments, keepsStatement: false)
    }

    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [[SQLValue]] {
        try connection.query(sql, arguments, keepsStatement: false)
    }

    @discardableResult
    func enqueue(_ job: NewJob) throws -> EnqueuedJob {
        try SQLiteJobStore.insert(job, now: now, on: connection)
    }
}
