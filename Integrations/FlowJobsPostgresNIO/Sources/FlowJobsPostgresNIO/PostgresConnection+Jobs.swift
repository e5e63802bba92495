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
    /// statements: jobs without a unique key in one round trip (`PostgresJobInsertion`); a job with
    /// one as the store enqueues it (`PostgresUniqueJobInsertion`): while a live job holds its key,
    /// including one enqueued earlier in this call or this transaction, it adds nothing and answers
    /// that job, marked a duplicate. Keys need PostgreSQL's default isolation (read committed): under
    /// repeatable read, a key committed by another transaction meanwhile fails the enqueue with a
    /// serialization error (SQLSTATE `40001`).
    ///
    /// - Parameters:
    ///   - jobs: the jobs, in order; none at all enqueues nothing.
    ///   - schema: the schema of the store's tables (`PostgresJobStore.Configuration.schema`); a store
    ///     must have opened it once, creating its tables.
    ///   - clock: the clock for the jobs' creation and due times: the workers' store's.
    ///   - logger: where postgres-nio logs the statements.
    /// - Returns: each job's identifier, state (`available`, or `scheduled` for a later run time) and
    ///   whether it is a duplicate, in order. Throws postgres-nio's `PSQLError` when the server
    ///   refuses a statement (a schema without the store's tables: SQLSTATE `42P01`), which leaves the
    ///   transaction failed.
    @discardableResult
    public func enqueueJobs(
        _ jobs: [NewJob], schema: String = "flow_jobs", clock: JobClock = .system, logger: Logger
    ) async throws -> [EnqueuedJob] {
        var enqueued: [EnqueuedJob] = []
        enqueued.reserveCapacity(jobs.count)
        var index = jobs.startIndex
        while index < jobs.endIndex {
            if jobs[index].uniqueKey != nil {
                enqueued.append(
                    try await enqueueJobWithUniqueKey(jobs[index], schema: schema, clock: clock, logger: logger))
                index += 1
                continue
            }
            // The jobs without a key up to the next keyed one: one statement, in order.
            let run = jobs[index...].prefix { $0.uniqueKey == nil }
            let insertion = PostgresJobInsertion(jobs: Array(run), schema: schema, clock: clock)
            var identifiers: [Int64] = []
            identifiers.reserveCapacity(run.count)
            let rows = try await query(
                PostgresQuery(unsafeSQL: insertion.sql, binds: try Self.bindings(insertion.arguments)), logger: logger)
            for try await identifier in rows.decode(Int64.self) { identifiers.append(identifier) }
            enqueued += insertion.enqueuedJobs(identifiers: identifiers)
            index += run.count
        }
        return enqueued
    }

    /// Enqueues `job`, which has a unique key, with the store's statements: the job that holds the
    /// key, or else the one added; a key committed by another transaction between the two
    /// statements sends it round again.
    private func enqueueJobWithUniqueKey(
        _ job: NewJob, schema: String, clock: JobClock, logger: Logger
    ) async throws -> EnqueuedJob {
        let insertion = PostgresUniqueJobInsertion(job: job, schema: schema, clock: clock)
        let lookup = PostgresQuery(unsafeSQL: insertion.lookupSQL, binds: try Self.bindings(insertion.lookupArguments))
        let insert = PostgresQuery(unsafeSQL: insertion.insertSQL, binds: try Self.bindings(insertion.insertArguments))
        // A round is followed by another only when the key's holder committed or finished between
        // its two statements. Each statement's rows are read to their end.
        for _ in 0..<Self.maxUniqueKeyRounds {
            var holder: (id: Int64, state: String)?
            for try await row in try await query(lookup, logger: logger).decode((Int64, String).self) { holder = row }
            if let holder { return insertion.duplicate(id: holder.id, state: holder.state) }
            var added: Int64?
            for try await id in try await query(insert, logger: logger).decode(Int64.self) { added = id }
            if let added { return insertion.inserted(id: added) }
        }
        throw JobEnqueueContendedError(uniqueKey: job.uniqueKey ?? "", rounds: Self.maxUniqueKeyRounds)
    }

    /// How many times a keyed enqueue looks its key up before it gives up.
    static let maxUniqueKeyRounds = 100

    /// Completes the running job of `context`'s attempt inside the transaction this connection is in,
    /// so that the handler's own writes in that transaction and the job's completion commit
    /// together, or neither does: exactly-once effects in this database.
    ///
    /// ```swift
    /// worker.register(chargeOrder) { order, context async throws in
    ///     try await client.withTransaction(logger: logger) { connection in
    ///         try await connection.query("INSERT INTO charges (order_id) VALUES (\(order.id))", logger: logger)
    ///         try await connection.completeJob(context, logger: logger)
    ///     }
    /// }
    /// ```
    ///
    /// It runs the store's own completion (`PostgresJobCompletion`): the job moves to the history
    /// table as completed, and the store's listeners (a `JobHandle` waiting for it) hear of it when the
    /// transaction commits. It first tells the context (`JobContext.completesInHandlerTransaction()`),
    /// so that when the handler returns the worker reads the job instead of completing it again: a
    /// committed completion is the attempt's end; a transaction that rolled back leaves the job
    /// running under the attempt's lease, and the worker then records the attempt as it does for any
    /// handler (completed when the handler returns, failed or retried when it throws). An attempt
    /// completed this way takes no `JobContext.addCompletionEffect(_:)` effects.
    ///
    /// - Parameters:
    ///   - context: the attempt's context, as the worker gave it to the handler.
    ///   - schema: the schema of the worker's store (`PostgresJobStore.Configuration.schema`).
    ///   - clock: the clock for the job's finish time: the worker's store's.
    ///   - logger: where postgres-nio logs the statement.
    /// - Throws: `JobStoreError.leaseLost` when the job no longer runs under the attempt's fence (its
    ///   lease ended and it was rescued, or it was cancelled): nothing of it changed, and thrown out of
    ///   `withTransaction` it rolls the handler's writes back. postgres-nio's `PSQLError` when the server
    ///   refuses the statement.
    public func completeJob(
        _ context: JobContext, schema: String = "flow_jobs", clock: JobClock = .system, logger: Logger
    ) async throws {
        context.completesInHandlerTransaction()
        let completion = PostgresJobCompletion(lease: context.lease, schema: schema, clock: clock)
        let rows = try await query(
            PostgresQuery(unsafeSQL: completion.sql, binds: try Self.bindings(completion.arguments)), logger: logger)
        var completed = false
        for try await _ in rows.decode(Int64.self) { completed = true }
        guard completed else { throw JobStoreError.leaseLost(completion.lease) }
    }

    /// `arguments` as postgres-nio's bindings, in order.
    private static func bindings(_ arguments: [SQLValue]) throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            switch argument {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            case .blob(let value): try bindings.append(value)
            }
        }
        return bindings
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

/// A keyed enqueue that found its key neither held nor free round after round: each time, the job
/// that held it was finished between the lookup and the insert. Nothing was added; the transaction
/// can be retried.
public struct JobEnqueueContendedError: Error, CustomStringConvertible, Sendable {
    /// The job's unique key.
    public let uniqueKey: String
    /// How many times the key was looked up.
    public let rounds: Int

    /// Says which key and how many rounds.
    public var description: String {
        "enqueueing the job with unique key \"\(uniqueKey)\" found its holder finished between lookup and insert "
            + "\(rounds) times: nothing was added"
    }
}
