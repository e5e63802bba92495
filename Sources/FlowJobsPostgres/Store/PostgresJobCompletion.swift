import Flow
import FlowJobs
import Foundation

/// The statement that completes a running job in a ``PostgresJobStore``'s tables from another
/// PostgreSQL client's transaction: the handler's own writes and the job's completion then commit
/// together, or neither does (exactly-once effects in that database).
///
/// It is the store's own completion (the one a `JobWorker` writes when a handler succeeds) with its
/// tables named in `schema`: it moves the job to the history table as completed, only while the job
/// is still running under the lease's fence, and notifies the store's listeners. Run ``sql`` with
/// ``arguments`` bound to `$1`, `$2`, …, in order, inside the transaction: one row (the job's `bigint`
/// identifier) means the job is completed when the transaction commits; no row means the lease was
/// lost (the job's lease ended and another attempt took it, or it was cancelled), and the transaction
/// should roll back. FlowJobsPostgresNIO's `PostgresConnection.completeJob` runs it, and tells the
/// attempt's `JobContext` first (`JobContext.completesInHandlerTransaction()`), so that the worker
/// does not complete the job again.
public struct PostgresJobCompletion: Sendable {
    /// The attempt whose job the statement completes.
    public let lease: JobLease
    /// The PostgreSQL schema of the store's tables.
    public let schema: String
    /// The statement: the job's move to the history table, under the lease's fence, and the
    /// `NOTIFY` of its end, its tables named with their schema.
    public let sql: String
    /// The values of the statement's parameters `$1`, `$2`, …, in order.
    public let arguments: [SQLValue]

    /// Builds the statement that completes the attempt of `lease` in the store in `schema`.
    ///
    /// - Parameters:
    ///   - lease: the attempt's lease (`JobContext.lease`).
    ///   - schema: the store's ``PostgresJobStore/Configuration/schema``.
    ///   - clock: the clock for the job's finish time; the store's clock.
    public init(lease: JobLease, schema: String = "flow_jobs", clock: JobClock = .system) {
        PostgresJobStore.checkSchemaName(schema)
        // A fresh instance: no store takes the payload for its own, so every listener (this
        // process's stores included) hears of the job's end.
        let statements = PostgresJobStore.Statements(
            channel: PostgresJobStore.notificationChannel(schema: schema), instance: UUID().uuidString)
        let (sql, arguments) = statements.completeInOneStatement([lease], now: clock.now().milliseconds, columns: "id")
        self.lease = lease
        self.schema = schema
        self.sql = PostgresSchema.qualifyingTables(of: sql, schema: schema)
        self.arguments = arguments
    }
}

/// The statements that enqueue one job with a unique key into a ``PostgresJobStore``'s tables from
/// another PostgreSQL client's transaction, with the store's semantics: while a live job (not yet
/// finished) holds the key, the enqueue adds nothing and answers that job, marked a duplicate.
///
/// The key needs two statements and, rarely, a second round: run ``lookupSQL`` with
/// ``lookupArguments``; a row (`bigint` identifier, `text` state) is the job that holds the key:
/// answer ``duplicate(id:state:)``. Otherwise run ``insertSQL`` with ``insertArguments``: a row (the
/// new job's `bigint` identifier) is the job added, answer ``inserted(id:)``; no row means another
/// transaction committed a job with the key since the lookup, so look up again. Run them inside a
/// transaction at PostgreSQL's default isolation (read committed), where each statement sees what
/// committed before it; under repeatable read, a key that another transaction committed meanwhile
/// makes the insert fail with a serialization error instead.
///
/// The statements are the store's own (``PostgresJobStore/enqueue(_:)`` runs them for jobs with
/// unique keys) with their tables named in `schema`; the insert also sends the `NOTIFY` of the job's
/// queue, delivered when the transaction commits.
public struct PostgresUniqueJobInsertion: Sendable {
    /// The job the statements add, which has a unique key.
    public let job: NewJob
    /// The PostgreSQL schema of the store's tables.
    public let schema: String
    /// Finds the live job that holds the key: its row is the job's identifier and state.
    public let lookupSQL: String
    /// The lookup's parameter `$1`: the key.
    public let lookupArguments: [SQLValue]
    /// Adds the job and notifies its queue, unless a live job holds the key: its row is the new
    /// job's identifier; no row when the key is held.
    public let insertSQL: String
    /// The values of the insert's parameters `$1`, `$2`, …, in order.
    public let insertArguments: [SQLValue]
    /// The state the job starts in when added: `available`, or `scheduled` for a later run time.
    private let state: JobState

    /// Builds the statements that enqueue `job` into the store in `schema`.
    ///
    /// - Parameters:
    ///   - job: a job with a unique key (``PostgresJobInsertion`` enqueues those without one, in one
    ///     statement).
    ///   - schema: the store's ``PostgresJobStore/Configuration/schema``.
    ///   - clock: the clock for the job's creation and due times; the store's clock.
    public init(job: NewJob, schema: String = "flow_jobs", clock: JobClock = .system) {
        guard let key = job.uniqueKey else {
            misuseFailure(
                "PostgresUniqueJobInsertion: the job (\(job.name)) has no unique key: enqueue it with PostgresJobInsertion"
            )
        }
        PostgresJobStore.checkSchemaName(schema)
        let now = clock.now().milliseconds
        let (arguments, state) = PostgresJobStore.Statements.insertArguments(job, now: now)
        let channel = PostgresJobStore.notificationChannel(schema: schema)
        // A fresh instance in the payload: no store takes it for its own.
        let payload = "\(UUID().uuidString) e \(job.queue)"
        let insert = """
            WITH inserted AS (
            \(PostgresJobStore.Statements.insertUnlessKeyHeld)),
            notified AS (SELECT count(pg_notify($12, $13)) FROM inserted)
            SELECT id FROM inserted, notified
            """
        self.job = job
        self.schema = schema
        self.lookupSQL = PostgresSchema.qualifyingTables(
            of: PostgresJobStore.Statements.jobWithUniqueKey, schema: schema)
        self.lookupArguments = [.text(key)]
        self.insertSQL = PostgresSchema.qualifyingTables(of: insert, schema: schema)
        self.insertArguments = arguments + [.text(channel), .text(payload)]
        self.state = state
    }

    /// What the enqueue answers when the lookup found the job that holds the key.
    ///
    /// - Parameters:
    ///   - id: the lookup row's identifier.
    ///   - state: the lookup row's state.
    public func duplicate(id: Int64, state: String) -> EnqueuedJob {
        PostgresJobStore.Statements.duplicate(fromRow: [.integer(id), .text(state)])
    }

    /// What the enqueue answers when the insert added the job.
    ///
    /// - Parameter id: the insert row's identifier.
    public func inserted(id: Int64) -> EnqueuedJob {
        EnqueuedJob(id: JobID(rawValue: id), isDuplicate: false, state: state)
    }
}
