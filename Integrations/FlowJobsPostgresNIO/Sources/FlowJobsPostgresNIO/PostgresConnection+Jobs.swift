import FlowJobs
import FlowJobsPostgres
import Foundation
import Logging
import PostgresNIO

extension PostgresConnection {
    /// Enqueues `jobs` on this connection, inside the transaction it is in (postgres-nio's
    /// `withTransaction`): they exist once, and only if, that transaction commits, and a `JobWorker`
    /// of any process, with a `PostgresJobStore` on `schema`, is woken by their `NOTIFY` and claims
    /// them then. Outside a transaction they are committed at once.
    ///
    /// ```swift
    /// try await client.withTransaction(logger: logger) { connection in
    ///     try await connection.query("INSERT INTO orders (id) VALUES (\(orderID))", logger: logger)
    ///     try await connection.enqueueJobs(
    ///         [NewJob(name: "ship", queue: "default", payload: Data(), maxAttempts: 5)], logger: logger)
    /// }
    /// ```
    ///
    /// The rows and the notification are those of `PostgresJobStore.enqueue(_:)`, from the same
    /// statement (`PostgresJobInsertion`), in one round trip.
    ///
    /// - Parameters:
    ///   - jobs: the jobs, none with a unique key (a key needs the store's own transaction:
    ///     `PostgresJobStore.transaction(_:)`); none at all enqueues nothing.
    ///   - schema: the schema of the store's tables (`PostgresJobStore.Configuration.schema`); a store
    ///     must have opened it once, creating its tables.
    ///   - clock: the clock for the jobs' creation and due times: the workers' store's.
    ///   - logger: where postgres-nio logs the statement.
    /// - Returns: each job's identifier and state (`available`, or `scheduled` for a later run time),
    ///   in order. Throws postgres-nio's `PSQLError` when the server refuses the statement (a schema
    ///   without the store's tables: SQLSTATE `42P01`), which leaves the transaction failed.
    @discardableResult
    public func enqueueJobs(
        _ jobs: [NewJob], schema: String = "flow_jobs", clock: JobClock = .system, logger: Logger
    ) async throws -> [EnqueuedJob] {
        guard !jobs.isEmpty else { return [] }
        let insertion = PostgresJobInsertion(jobs: jobs, schema: schema, clock: clock)
        var bindings = PostgresBindings(capacity: insertion.arguments.count)
        for argument in insertion.arguments {
            switch argument {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .blob(let value): try bindings.append(value)
            }
        }
        var identifiers: [Int64] = []
        identifiers.reserveCapacity(jobs.count)
        let rows = try await query(PostgresQuery(unsafeSQL: insertion.sql, binds: bindings), logger: logger)
        for try await identifier in rows.decode(Int64.self) { identifiers.append(identifier) }
        return insertion.enqueuedJobs(identifiers: identifiers)
    }

    /// Enqueues `job` on this connection, inside the transaction it is in; see
    /// ``enqueueJobs(_:schema:clock:logger:)``.
    ///
    /// - Returns: the job's identifier and state.
    @discardableResult
    public func enqueueJob(
        _ job: NewJob, schema: String = "flow_jobs", clock: JobClock = .system, logger: Logger
    ) async throws -> EnqueuedJob {
        try await enqueueJobs([job], schema: schema, clock: clock, logger: logger)[0]
    }
}
