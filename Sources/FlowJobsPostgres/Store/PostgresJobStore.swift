import Flow
import FlowJobs
import FlowNet
import Foundation

/// A `JobStore` in a PostgreSQL database: workers in many processes, on many machines, share its
/// jobs with the same leases, fences, unique keys and quarantine as `SQLiteJobStore`.
///
/// ```swift
/// let store = try await PostgresJobStore.open(
///     url: "postgresql://app:secret@db.internal/app", on: loop).get()
/// let client = JobClient(store: store)
/// ```
///
/// - libpq on the loop: connections are non-blocking libpq connections whose sockets the loop
///   watches; a pool of at most ``Configuration/maxConnections`` serves the store.
/// - Transactions: every change runs as one transaction on a connection of the pool. Its steps are
///   synchronous code (the protocol's `JobStore/transaction(_:)` and a finish's effects are
///   synchronous), run on a thread of the store's own (at most one per pooled connection), where
///   each statement waits for its answer; the statement itself goes through the connection on the
///   loop, which never waits. Reads and one-statement changes (``job(_:)``,
///   ``jobs(state:queue:limit:)``, ``heartbeat(_:leaseDuration:)``) go straight to a connection.
/// - Claims take due jobs with `FOR UPDATE SKIP LOCKED`, highest priority first, then earliest run
///   time, as many as the worker has free slots per queue, all queues in one statement (a
///   transaction only where a queue has a limit across workers or a lease has ended).
/// - Finished jobs move to `flow_jobs_history` in the transaction that finishes them: the hot table
///   holds only unfinished jobs. Completions without effects that arrive while one is being written
///   are written together, in one statement and one commit.
/// - Wake-ups: each enqueue's commit sends a `NOTIFY`, and a connection of the store (besides the
///   pool) listens from the first ``observe(_:)`` on (a worker's start, a handle awaiting its job),
///   so that an idle worker in another process claims at once. A store nobody observes (a process
///   that only enqueues) holds no listening session: the server wakes every listening session of
///   the database at each `NOTIFY`, its own ones included. Claims and reads of jobs made after the
///   first ``observe(_:)`` start once its `LISTEN` took effect, so that what another process
///   commits after them is heard. Once listening, and again after that connection was lost and
///   reconnected (with a backoff), it reports every queue with claimable jobs as enqueued
///   (notifications sent meanwhile went unheard), the first time leaving out the queues its
///   observers already heard of; a slow safety poll (``Configuration/safetyPollInterval``) covers
///   a connection cut without an error.
/// - Opening runs the schema's migrations, one process at a time; a schema written by a newer
///   FlowJobsPostgres is refused with `JobStoreError/newerSchema(found:supported:)`.
/// - Errors: the server's refusals, lost connections and failed connects are ``PostgresError``s. A
///   change whose connection was lost fails with ``PostgresError/connectionLost(message:)`` (it may or
///   may not have committed: the fence and unique keys make running it again safe); reads are retried
///   once on a new connection.
public final class PostgresJobStore: JobStore {
    /// How a store is opened.
    public struct Configuration: Sendable {
        /// The clock for run times and leases; the system's wall clock by default.
        public var clock: JobClock
        /// The PostgreSQL schema that holds the store's tables, created when missing; `flow_jobs` by
        /// default. Stores with different schemas in one database are independent.
        public var schema: String
        /// The most connections the store opens at once (its listener's not counted); 4 by default.
        public var maxConnections: Int
        /// The server's `statement_timeout` for the store's connections; `nil` keeps the server's.
        public var statementTimeout: Duration?
        /// How often a store with observers checks its listening connection and reports the queues
        /// with due jobs, for notifications lost without the connection failing; 5 s by default, `nil`
        /// for never (a lost connection is still noticed and followed by that report).
        public var safetyPollInterval: Duration?
        /// Whether each commit of the store's sessions waits until the server has flushed it to disk
        /// (`synchronous_commit`, set per session); `true` by default.
        ///
        /// With `false`, a commit returns once the server has it in memory: enqueues, claims and
        /// completions run several times faster where the disk's flushes limit them, and a crash of
        /// the server (not of a worker) can lose the commits of its last moments, whose callers were
        /// already told they succeeded: an acknowledged enqueue may be gone, a completed job run
        /// again. The database stays consistent: what is lost is the last commits, whole, never part
        /// of one.
        public var synchronousCommit: Bool

        /// Describes how to open a store.
        ///
        /// - Parameters:
        ///   - clock: the clock for run times and leases.
        ///   - schema: the PostgreSQL schema of the store's tables: letters, digits and `_`, at most
        ///     40 characters.
        ///   - maxConnections: the pool's size, at least 1.
        ///   - statementTimeout: the longest a statement may run before the server cancels it.
        ///   - safetyPollInterval: how often an observed store checks for lost notifications.
        ///   - synchronousCommit: whether commits wait for the disk (durable); see
        ///     ``synchronousCommit``.
        public init(
            clock: JobClock = .system, schema: String = "flow_jobs", maxConnections: Int = 4,
            statementTimeout: Duration? = nil, safetyPollInterval: Duration? = .seconds(5),
            synchronousCommit: Bool = true
        ) {
            self.synchronousCommit = synchronousCommit
            self.safetyPollInterval = safetyPollInterval
            self.clock = clock
            self.schema = schema
            self.maxConnections = maxConnections
            self.statementTimeout = statementTimeout
        }
    }

    /// The clock for run times and leases.
    public let clock: JobClock
    /// The loop that drives the store's connections.
    public let loop: EventLoop
    /// The PostgreSQL schema of the store's tables.
    public let schema: String
    let pool: PostgresConnectionPool
    let statements: Statements
    let connectionString: String
    /// What each session of the store runs first: its schema as the search path, its name.
    let sessionSetup: [String]
    private let observers = Locked<(next: UInt64, byKey: [UInt64: @Sendable (JobStoreNotification) -> Void])>((0, [:]))
    private let listener: PostgresListener
    /// Completes once the listener's first `LISTEN` took effect (or its first attempt failed); `nil`
    /// until the first ``observe(_:)`` starts the listener.
    private let listening = Locked<Future<Void>?>(nil)
    /// The queues this store told its observers of (``publish(_:)``) since the listener started and
    /// until its first report: that report leaves them out, the observers having heard of them.
    private let announcedBeforeFirstReport = Locked<Set<String>?>(nil)
    let transactionThreads: TransactionThreads
    /// Completions waiting for the next batch (``completeInBatch(_:)``).
    let completionBatches = Locked(CompletionBatches())
    /// Each schedule's state as this store's last firing of it left it: what a timer's tick is fired
    /// against in one statement (``fireSchedule(_:)``), which checks it still holds.
    let lastFiredSchedules = Locked<[String: ScheduleState]>([:])
    /// How many of this store's schedule firings ran as a transaction of several statements rather than
    /// as one statement: what the tests read to tell the two apart.
    package let scheduleFiringsInTransaction = Locked(0)
    /// The store's leader elections, held weakly: those still running stop when it closes.
    let elections = Locked<[WeakElection]>([])

    private init(connectionString: String, configuration: Configuration, loop: EventLoop) {
        let schema = configuration.schema
        Self.checkSchemaName(schema)
        self.connectionString = connectionString
        self.clock = configuration.clock
        self.loop = loop
        self.schema = schema
        // The application name lets an administrator (and the tests) tell the store's sessions apart.
        var setup = [
            "SET search_path TO \(PostgresSchema.quoted(schema))", "SET application_name TO 'flow-jobs:\(schema)'",
        ]
        if let timeout = configuration.statementTimeout {
            setup.append("SET statement_timeout TO \(max(1, timeout.milliseconds))")
        }
        if !configuration.synchronousCommit { setup.append("SET synchronous_commit TO off") }
        sessionSetup = Array(setup.prefix(2))
        transactionThreads = TransactionThreads(limit: configuration.maxConnections)
        pool = PostgresConnectionPool(
            connectionString: connectionString, maxConnections: configuration.maxConnections, setup: setup, loop: loop)
        statements = Statements(channel: Self.notificationChannel(schema: schema), instance: UUID().uuidString)
        listener = PostgresListener(
            connectionString: connectionString, channel: statements.channel, setup: setup, loop: loop,
            openCount: pool.openCount, safetyInterval: configuration.safetyPollInterval)
    }

    /// Opens the store at `url` (a `postgresql://` URL or a libpq connection string), creating its
    /// schema and tables when missing and migrating an older schema.
    ///
    /// ```swift
    /// let store = try await PostgresJobStore.open(url: "postgresql://app@localhost/app", on: loop).get()
    /// ```
    ///
    /// - Parameters:
    ///   - url: where the database is, with the credentials.
    ///   - loop: the loop that drives the store's connections; it must be running.
    ///   - configuration: the clock, schema, pool size and statement timeout.
    /// - Returns: the store, once migrated; fails with ``PostgresError`` when the server cannot be
    ///   reached or refuses, and with `JobStoreError/newerSchema(found:supported:)` when the schema
    ///   is newer than this code.
    public static func open(
        url: String, on loop: EventLoop, configuration: Configuration = Configuration()
    ) -> Future<PostgresJobStore> {
        let store = PostgresJobStore(connectionString: url, configuration: configuration, loop: loop)
        let schema = store.schema
        return store.pool.withConnection { connection in
            store.transactionThreads.future {
                try PostgresSchema.migrate(PostgresSession(connection: connection), schema: schema)
            }
        }.flatMapResult(on: .none) { result in
            switch result {
            case .success: return Future(store)
            case .failure(let error): return store.close().map(on: .none) { throw error }
            }
        }
    }

    deinit {
        // A loop already closed has closed the connections' handles with it.
        transactionThreads.stop()
        guard !loop.isClosed else { return }
        listener.stop()
        stopElections()
        _ = pool.close()
    }

    /// Stops the store: idle connections close at once, those running a statement when it ends, its
    /// leader elections stop (``PostgresLeaderElection/stop()``), and later operations fail with
    /// ``PostgresError/closed``.
    @discardableResult
    public func close() -> Future<Void> {
        transactionThreads.stop()
        listener.stop()
        stopElections()
        return pool.close()
    }

    /// Stops the elections still running: their sessions are the store's connections too.
    private func stopElections() {
        for election in elections.withLock({ $0 }) { election.election?.stop() }
    }

    /// libpq connections the store holds open now (its pool's and its listener's).
    package var openConnectionCount: Int { pool.openCount.value }

    // MARK: Running transactions

    /// Runs `body` in one transaction on a connection of the pool, on a transaction thread; commits
    /// when it returns, rolls back when it throws, and tells observers after the commit.
    func inTransaction<Value: Sendable>(
        _ body: @escaping @Sendable (PostgresSession, Int64) throws -> Value
    ) -> Future<Value> {
        let clock = clock
        let threads = transactionThreads
        return pool.withConnection { connection in
            threads.future { () throws -> Committed<Value> in
                let session = PostgresSession(connection: connection)
                try session.run("BEGIN")
                do {
                    let value = try body(session, clock.now().milliseconds)
                    try session.run("COMMIT")
                    return Committed(value: value, notifications: session.pendingNotifications)
                } catch {
                    _ = try? session.run("ROLLBACK")
                    throw error
                }
            }
        }.map(on: .none) { [weak self] committed in
            self?.publish(committed.notifications)
            return committed.value
        }
    }

    private struct Committed<Value: Sendable>: Sendable {
        let value: Value
        let notifications: [JobStoreNotification]
    }

    func publish(_ notifications: [JobStoreNotification]) {
        guard !notifications.isEmpty else { return }
        announcedBeforeFirstReport.withLock { announced in
            guard announced != nil else { return }
            for case .enqueued(let queues) in notifications { announced?.formUnion(queues) }
        }
        let current = observers.withLock { Array($0.byKey.sorted { $0.key < $1.key }.map(\.value)) }
        for notification in notifications {
            for observer in current { observer(notification) }
        }
    }

    // MARK: JobStore

    /// Adds jobs in one transaction; see `JobStore/enqueue(_:)`.
    ///
    /// Jobs without unique keys go in one statement, on a connection of the pool and with no thread:
    /// a batch of any size is one round trip to the server and one commit.
    public func enqueue(_ jobs: [NewJob]) -> Future<[EnqueuedJob]> {
        guard !jobs.isEmpty else { return Future([]) }
        let statements = statements
        if jobs.allSatisfy({ $0.uniqueKey == nil }) {
            let now = clock.now().milliseconds
            let (sql, arguments) = statements.insertWithoutUniqueKeys(jobs, now: now)
            return pool.withConnection { connection in
                connection.query(sql, arguments, prepared: true)
            }.map(on: .none) { [weak self] result in
                guard result.rows.count == jobs.count else {
                    throw PostgresError.server(sqlState: "", message: "the enqueue answered \(result.rows.count) rows")
                }
                let enqueued = zip(jobs, result.rows).map { job, row in
                    EnqueuedJob(
                        id: JobID(rawValue: row[0].integerValue ?? 0), isDuplicate: false,
                        state: (job.runAt?.milliseconds ?? now) <= now ? .available : .scheduled)
                }
                self?.publish([.enqueued(queues: Set(jobs.map(\.queue)))])
                return enqueued
            }
        }
        return inTransaction { session, now in
            let enqueued = try jobs.map { try statements.insert($0, now: now, on: session) }
            try statements.notifyOtherProcesses(session)
            return enqueued
        }
    }

    /// Rescues expired leases and claims due jobs; see `JobStore/claim(_:)`.
    ///
    /// A claim is one statement, with no transaction around it, unless a queue it claims from has a
    /// limit across workers, a lease has ended (a rescue) or the request measures its queues: those
    /// run as a transaction of several statements.
    public func claim(_ request: ClaimRequest) -> Future<ClaimResult> {
        afterListening { [self] in claimNow(request) }
    }

    private func claimNow(_ request: ClaimRequest) -> Future<ClaimResult> {
        let statements = statements
        let inTransaction: @Sendable () -> Future<ClaimResult> = { [weak self] in
            guard let self else { return Future(error: PostgresError.closed) }
            return self.inTransaction { session, now in try statements.claim(request, now: now, on: session) }
        }
        guard !request.measuresQueues else { return inTransaction() }
        let (sql, arguments) = statements.claimInOneStatement(request, now: clock.now().milliseconds)
        return pool.withConnection { connection in
            connection.query(sql, arguments, prepared: true)
        }.flatMap(on: .none) { result in
            if let claimed = Statements.claimResult(fromOneStatement: result.rows) { return Future(claimed) }
            return inTransaction()
        }
    }

    /// Extends a running job's lease; see `JobStore/heartbeat(_:leaseDuration:)`.
    public func heartbeat(_ lease: JobLease, leaseDuration: Duration) -> Future<HeartbeatResult> {
        let expiresAt = clock.now().milliseconds + leaseDuration.milliseconds
        // Checked by its fence: running it again after a lost connection sets the same lease end.
        return pool.withConnection(retriesLostConnection: true) { connection in
            connection.query(
                "UPDATE flow_jobs SET lease_expires_at = $1 WHERE id = $2 AND fence = $3 AND state = 'running' "
                    + "RETURNING cancel_requested",
                [.integer(expiresAt), .integer(lease.id.rawValue), .integer(lease.fence)]
            ).map(on: .none) { result in
                guard let row = result.rows.first else { throw JobStoreError.leaseLost(lease) }
                return HeartbeatResult(
                    leaseExpiresAt: Date(milliseconds: expiresAt), isCancellationRequested: row[0].integerValue == 1)
            }
        }
    }

    /// Ends an attempt, with `effects` in the same transaction; see `JobStore/finish(_:outcome:effects:)`.
    ///
    /// A completion without effects is one statement (the move to the history table and the
    /// notification included), shared with the completions that arrive while the one before is
    /// being written; other ends run as a transaction.
    public func finish(
        _ lease: JobLease, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) -> Future<JobRecord> {
        // The common end, a completion without effects, is written with the others that arrive
        // meanwhile, in one statement.
        if outcome == .completed && effects == nil { return completeInBatch(lease) }
        let statements = statements
        return inTransaction { session, now in
            let record = try statements.runningRecord(lease, on: session)
            if let effects { try effects(PostgresTransaction(session: session, now: now, store: statements)) }
            let (lifecycle, runAt, lastError) = try outcome.applied(to: record)
            let stored = try statements.store(
                lifecycle, of: record, runAt: runAt.milliseconds, lastError: lastError, worker: record.worker, now: now,
                on: session)
            // Other processes hear of the end (their handles), of a retry to arm a timer for, and of
            // jobs the effects enqueued.
            if stored.state == .retryable { session.pendingNotifications.append(.enqueued(queues: [stored.queue])) }
            try statements.notifyOtherProcesses(session)
            return stored
        }
    }

    /// Gives a running job back; see `JobStore/release(_:)`.
    public func release(_ lease: JobLease) -> Future<Void> {
        let statements = statements
        return inTransaction { session, now in
            let record = try statements.runningRecord(lease, on: session)
            var lifecycle = record.lifecycle
            try lifecycle.apply(.released)
            _ = try statements.store(
                lifecycle, of: record, runAt: now, lastError: record.lastError, worker: record.worker, now: now,
                on: session)
            session.pendingNotifications.append(.enqueued(queues: [record.queue]))
            try statements.notifyOtherProcesses(session)
        }
    }

    /// Keeps the first attempt's trace context; see `JobStore/recordFirstAttemptTrace(_:traceContext:)`.
    @discardableResult
    public func recordFirstAttemptTrace(_ lease: JobLease, traceContext: [String: String]) -> Future<Void> {
        pool.withConnection(retriesLostConnection: true) { connection in
            connection.query(
                "UPDATE flow_jobs SET first_attempt_trace_context = $1 "
                    + "WHERE id = $2 AND fence = $3 AND state = 'running'",
                [StoredJobRow.encodeTraceContext(traceContext), .integer(lease.id.rawValue), .integer(lease.fence)]
            ).map(on: .none) { result in
                guard result.affectedRows == 1 else { throw JobStoreError.leaseLost(lease) }
            }
        }
    }

    /// Cancels a queued job or asks a running one to stop; see `JobStore/cancel(_:)`.
    public func cancel(_ id: JobID) -> Future<JobCancellation> {
        let statements = statements
        return inTransaction { session, now in
            guard let record = try statements.liveRecord(id, locking: true, on: session) else {
                if let finished = try statements.record(id, on: session) { return .alreadyFinished(finished.state) }
                return .notFound
            }
            var lifecycle = record.lifecycle
            try lifecycle.apply(.cancellationRequested)
            _ = try statements.store(
                lifecycle, of: record, runAt: record.runAt.milliseconds, lastError: record.lastError,
                worker: record.worker, now: now, on: session)
            if lifecycle.state == .cancelled { return .cancelled }
            session.pendingNotifications.append(.cancellationRequested(id))
            try statements.notifyOtherProcesses(session)
            return .requested
        }
    }

    /// Sets or removes a queue's limit across every worker; see
    /// `JobStore/setConcurrencyLimit(_:forQueue:)`.
    @discardableResult
    public func setConcurrencyLimit(_ maxRunning: Int?, forQueue queue: String) -> Future<Void> {
        misusePrecondition(
            maxRunning.map { $0 >= 1 } ?? true,
            "setConcurrencyLimit(_:forQueue:): the limit must be at least 1, or nil for none, not \(maxRunning ?? 0)")
        let statements = statements
        return inTransaction { session, _ in
            if let maxRunning {
                try session.run(
                    "INSERT INTO flow_queues (name, max_running) VALUES ($1, $2) "
                        + "ON CONFLICT (name) DO UPDATE SET max_running = excluded.max_running",
                    [.text(queue), .integer(Int64(maxRunning))])
            } else {
                try session.run("DELETE FROM flow_queues WHERE name = $1", [.text(queue)])
            }
            // Workers waiting on the old limit may claim now.
            session.pendingNotifications.append(.enqueued(queues: [queue]))
            try statements.notifyOtherProcesses(session)
        }
    }

    /// The job's record, unfinished or finished; see `JobStore/job(_:)`.
    public func job(_ id: JobID) -> Future<JobRecord?> {
        afterListening { [self] in readJob(id) }
    }

    private func readJob(_ id: JobID) -> Future<JobRecord?> {
        pool.withConnection(retriesLostConnection: true) { connection in
            connection.query(
                "SELECT \(PostgresSchema.jobColumns) FROM flow_jobs WHERE id = $1 UNION ALL "
                    + "SELECT \(PostgresSchema.jobColumns) FROM flow_jobs_history WHERE id = $1",
                [.integer(id.rawValue)]
            ).map(on: .none) { $0.rows.first.map(StoredJobRow.record) }
        }
    }

    /// Records filtered by state and queue, unfinished and finished; see
    /// `JobStore/jobs(state:queue:limit:)`.
    public func jobs(state: JobState?, queue: String?, limit: Int) -> Future<[JobRecord]> {
        pool.withConnection(retriesLostConnection: true) { connection in
            connection.query(
                """
                SELECT * FROM (
                    SELECT \(PostgresSchema.jobColumns) FROM flow_jobs
                    UNION ALL SELECT \(PostgresSchema.jobColumns) FROM flow_jobs_history) AS jobs
                WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR queue = $2)
                ORDER BY id LIMIT $3
                """,
                [
                    state.map { .text($0.rawValue) } ?? .null, queue.map(SQLValue.text) ?? .null,
                    .integer(Int64(max(0, limit))),
                ]
            ).map(on: .none) { $0.rows.map(StoredJobRow.record) }
        }
    }

    /// Runs `body` in one transaction on a connection of the store; see `JobStore/transaction(_:)`.
    ///
    /// `body` runs on a thread of the store's own and each of its statements waits there for the
    /// server's answer. Write its SQL for PostgreSQL, with `?` (numbered in order) or `$1`, `$2`, …
    /// placeholders; arguments are bound, and rows come back typed, as for ``query(_:_:)``.
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
        let statements = statements
        return inTransaction { session, now in
            let value = try body(PostgresTransaction(session: session, now: now, store: statements))
            try statements.notifyOtherProcesses(session)
            return value
        }
    }

    /// Starts the store's listening connection unless started before; the future completes once its
    /// first `LISTEN` took effect (from then on no other process's enqueue goes unheard), or its
    /// first attempt failed (it retries).
    private func startListeningOnce() {
        let pending = PendingResult<Void>()
        let isFirst = listening.withLock { listening in
            guard listening == nil else { return false }
            listening = pending.future()
            return true
        }
        guard isFirst else { return }
        announcedBeforeFirstReport.withLock { $0 = [] }
        startListening().onResult(on: .none) { _ in pending.complete(.success(())) }
    }

    /// `body`'s future, started once the listener's first `LISTEN` took effect when ``observe(_:)``
    /// started it and it has not yet: a read made after registering an observer then sees what
    /// another process committed before the `LISTEN`, and hears what it commits after.
    private func afterListening<Value: Sendable>(_ body: @escaping @Sendable () -> Future<Value>) -> Future<Value> {
        guard let listening = listening.withLock({ $0 }), listening.result == nil else { return body() }
        // Whatever its end: a caller that cancelled its own wait must not fail the others'.
        return listening.flatMapResult(on: .none) { _ in body() }
    }

    private func startListening() -> Future<Void> {
        let statements = statements
        let listening = PendingResult<Void>()
        listener.start(
            onNotification: { [weak self] payload in
                guard let self, let notification = statements.notification(fromPayload: payload) else { return }
                publish([notification])
            },
            onListening: { [weak self] _ in
                listening.succeed(())
                // Enqueues committed while nobody listened (before the first observer, or while the
                // connection was lost): tell the workers where to look.
                self?.reportQueuesWithClaimableJobs(dueOnly: false)
            },
            onFailure: { listening.succeed(()) },
            onSafetyPoll: { [weak self] in self?.reportQueuesWithClaimableJobs(dueOnly: true) })
        return listening.future()
    }

    /// Publishes `.enqueued` for the queues holding claimable jobs (due now, when `dueOnly`).
    private func reportQueuesWithClaimableJobs(dueOnly: Bool) {
        guard observers.withLock({ !$0.byKey.isEmpty }) else { return }
        let now = clock.now().milliseconds
        pool.withConnection(retriesLostConnection: true) { connection in
            connection.query(
                "SELECT DISTINCT queue FROM flow_jobs WHERE state IN \(Statements.claimableStates) AND run_at <= $1",
                [.integer(dueOnly ? now : Int64.max)])
        }.onValue(on: .none) { [weak self] result in
            guard let self else { return }
            let announced = announcedBeforeFirstReport.withLock { announced in
                defer { announced = nil }
                return announced ?? []
            }
            let queues = Set(result.rows.compactMap { $0.first?.textValue }).subtracting(announced)
            if !queues.isEmpty { publish([.enqueued(queues: queues)]) }
        }
    }

    /// Calls `observer` after this store's commits, and after other processes' enqueues and
    /// cancellation requests (heard by the store's listening connection); see `JobStore/observe(_:)`
    /// and the store's description. The first call opens the listening connection; claims and reads
    /// of a job made after it start once its `LISTEN` took effect.
    public func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable {
        let key = observers.withLock { observers in
            observers.next += 1
            observers.byKey[observers.next] = observer
            return observers.next
        }
        startListeningOnce()
        return Disposer { [weak self] in
            _ = self?.observers.withLock { $0.byKey.removeValue(forKey: key) }
        }
    }
}
