import Flow
import FlowJobs
import Foundation

/// The statement that enqueues jobs into a ``PostgresJobStore``'s tables from another PostgreSQL
/// client's transaction: the same rows and the same `NOTIFY` as the store's own enqueue, in one
/// statement, so that a `JobWorker` of any process (on a Flow loop, with the store's own connections)
/// claims them once the transaction commits, and never sees them when it rolls back.
///
/// FlowJobsPostgresNIO runs it inside a postgres-nio transaction; any client that binds parameters
/// can run it the same way: run ``sql`` with ``arguments`` bound to `$1`, `$2`, …, in order, and read
/// its rows' first column (`bigint` identifiers) into ``enqueuedJobs(identifiers:)``.
///
/// The statement's text is the store's own (``PostgresJobStore/enqueue(_:)`` runs it for jobs without
/// unique keys) with its tables named in `schema`, so that it needs no search path and the two write
/// alike. A store must have opened `schema` once: its migrations create the tables.
public struct PostgresJobInsertion: Sendable {
    /// The jobs the statement adds, in order.
    public let jobs: [NewJob]
    /// The PostgreSQL schema of the store's tables.
    public let schema: String
    /// The statement: an `INSERT` into the schema's jobs table and the `NOTIFY` of the jobs' queues,
    /// its tables named with their schema.
    public let sql: String
    /// The values of the statement's parameters `$1`, `$2`, …, in order. Arrays go as their text form
    /// (`{…}`), which the statement casts.
    public let arguments: [SQLValue]
    /// The time the jobs were enqueued at, in milliseconds since 1970, from the clock given.
    private let now: Int64

    /// Builds the statement that adds `jobs` to the store in `schema`.
    ///
    /// - Parameters:
    ///   - jobs: at least one job, none with a unique key (a key needs a lookup first:
    ///     ``PostgresUniqueJobInsertion`` enqueues those).
    ///   - schema: the store's ``PostgresJobStore/Configuration/schema``.
    ///   - clock: the clock for the jobs' creation and due times; the store's clock.
    public init(jobs: [NewJob], schema: String = "flow_jobs", clock: JobClock = .system) {
        misusePrecondition(!jobs.isEmpty, "PostgresJobInsertion: there must be at least one job to enqueue")
        misusePrecondition(
            jobs.allSatisfy { $0.uniqueKey == nil },
            "PostgresJobInsertion: a job with a unique key (\"\(jobs.first { $0.uniqueKey != nil }?.uniqueKey ?? "")\") "
                + "needs a lookup first: enqueue it with PostgresUniqueJobInsertion")
        PostgresJobStore.checkSchemaName(schema)
        let now = clock.now().milliseconds
        // A fresh instance: no store takes the payload for its own, so every listener (this
        // process's stores included) hears of the jobs.
        let statements = PostgresJobStore.Statements(
            channel: PostgresJobStore.notificationChannel(schema: schema), instance: UUID().uuidString)
        let (sql, arguments) = statements.insertWithoutUniqueKeys(jobs, now: now)
        self.jobs = jobs
        self.schema = schema
        self.sql = PostgresSchema.qualifyingTables(of: sql, schema: schema)
        self.arguments = arguments
        self.now = now
    }

    /// What the enqueue answers for each job, given the identifiers the statement returned (its
    /// rows' first column, in order).
    ///
    /// - Parameter identifiers: one per job: a different count means the statement was not this one.
    public func enqueuedJobs(identifiers: [Int64]) -> [EnqueuedJob] {
        misusePrecondition(
            identifiers.count == jobs.count,
            "PostgresJobInsertion.enqueuedJobs: \(identifiers.count) identifiers for \(jobs.count) jobs")
        return zip(jobs, identifiers).map { job, id in
            EnqueuedJob(
                id: JobID(rawValue: id), isDuplicate: false,
                state: (job.runAt?.milliseconds ?? now) <= now ? .available : .scheduled)
        }
    }
}

extension PostgresJobStore {
    /// The `NOTIFY` channel of the store whose tables are in `schema`.
    static func notificationChannel(schema: String) -> String { "flow_jobs:" + schema }

    /// Stops with a message unless `schema` can name a store's PostgreSQL schema.
    static func checkSchemaName(_ schema: String) {
        misusePrecondition(
            !schema.isEmpty && schema.count <= 40
                && schema.unicodeScalars.allSatisfy {
                    $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "_")
                },
            "PostgresJobStore: the schema name must be 1 to 40 letters, digits or underscores, not \"\(schema)\"")
    }
}

extension PostgresSchema {
    /// `sql` with each of the store's tables named in `schema`: every identifier outside quotes that
    /// starts with `flow_` and is not already qualified (after a `.`); no column or function of the
    /// store's starts so. The store's statements name their tables bare, for the search path its own
    /// sessions set.
    static func qualifyingTables(of sql: String, schema: String) -> String {
        let characters = Array(sql)
        var output = ""
        output.reserveCapacity(sql.utf8.count + 64)
        var index = 0
        var quote: Character?
        func isIdentifier(_ character: Character) -> Bool {
            character.isASCII && (character.isLetter || character.isNumber || character == "_" || character == "$")
        }
        while index < characters.count {
            let character = characters[index]
            if let open = quote {
                if character == open { quote = nil }
                output.append(character)
                index += 1
                continue
            }
            if character == "'" || character == "\"" {
                quote = character
                output.append(character)
                index += 1
                continue
            }
            guard isIdentifier(character) else {
                output.append(character)
                index += 1
                continue
            }
            var end = index
            while end < characters.count, isIdentifier(characters[end]) { end += 1 }
            let word = String(characters[index..<end])
            if word.hasPrefix("flow_") && output.last(where: { !$0.isWhitespace }) != "." {
                output += quoted(schema) + "." + word
            } else {
                output += word
            }
            index = end
        }
        return output
    }
}
