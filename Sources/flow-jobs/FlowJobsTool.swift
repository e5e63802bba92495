// flow-jobs: looks after the jobs of a FlowJobs database (an SQLite file, or PostgreSQL) from the
// command line.
//
//     swift run flow-jobs stats jobs.sqlite
//     swift run flow-jobs list jobs.sqlite --state discarded --json
//     swift run flow-jobs retry postgresql://app:secret@db.internal/app 42
//
// Exit status: 0 on success, 1 when the database cannot be used or a job is not found or cannot
// take the change, 64 for a command line it does not understand (`--help` lists the commands).

import ArgumentParser
import Flow
import FlowJobs
import FlowJobsPostgres
import Foundation

@main
struct FlowJobsTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flow-jobs",
        abstract: "Lists, inspects, retries, cancels, discards and purges the jobs of a FlowJobs database.",
        discussion: """
            Each command opens the database given as its first argument: a postgresql:// URL (the store's tables \
            in --schema, flow_jobs by default), or an SQLite file, where a missing file is an error, never \
            created. Other processes (workers) may use the database at the same time.
            """,
        subcommands: [
            ListCommand.self, InspectCommand.self, StatsCommand.self, RetryCommand.self, CancelCommand.self,
            DiscardCommand.self, PurgeCommand.self, SchedulesCommand.self, PauseCommand.self, ResumeCommand.self,
        ])
}

/// The options every command takes: the database, and whether to answer in JSON.
struct DatabaseOptions: ParsableArguments {
    @Argument(help: "The job database: an SQLite file, or a postgresql:// URL.")
    var database: String

    @Option(help: "The PostgreSQL schema of the store's tables (a postgresql:// database only).")
    var schema = "flow_jobs"

    @Flag(help: "Print JSON instead of text, for scripts.")
    var json = false

    /// Whether the database is PostgreSQL rather than an SQLite file.
    var isPostgres: Bool { JobStoreLocation.isPostgresURL(database) }

    /// Opens the database, which must exist: a typo in a file's path is an error, not a new empty
    /// database. A PostgreSQL store is opened on the main loop (its schema created when missing).
    func openStore() throws -> any JobStore {
        guard isPostgres else {
            return try SQLiteJobStore(path: database, configuration: .init(createsMissingFile: false))
        }
        return try EventLoop.main.run(
            until: PostgresJobStore.open(url: database, on: .main, configuration: .init(schema: schema)))
    }
}

/// An error of the tool's own, printed as its sentence.
struct ToolError: Error, CustomStringConvertible {
    /// What went wrong.
    let description: String
}

/// Parses a job identifier as the tool's commands take it (`42` or `#42`).
struct JobIdentifier: ExpressibleByArgument {
    let id: JobID

    init?(argument: String) {
        let digits = argument.hasPrefix("#") ? String(argument.dropFirst()) : argument
        guard let value = Int64(digits), value > 0 else { return nil }
        id = JobID(rawValue: value)
    }
}

extension JobState: ExpressibleByArgument {}

// MARK: Output

/// A job as the tool prints it: the record's fields, with times in ISO 8601 and the payload as text
/// when it is UTF-8 (base64 otherwise).
struct JobSummary: Codable {
    var id: Int64
    var name: String
    var queue: String
    var state: String
    var attempt: Int
    var maxAttempts: Int
    var priority: Int
    var runAt: String
    var leaseExpiresAt: String?
    var worker: String?
    var uniqueKey: String?
    var lastError: String?
    var cancellationRequested: Bool
    var createdAt: String
    var finishedAt: String?
    var payload: String
    var payloadEncoding: String

    init(_ record: JobRecord) {
        id = record.id.rawValue
        name = record.name
        queue = record.queue
        state = record.state.rawValue
        attempt = record.attempt
        maxAttempts = record.lifecycle.maxAttempts
        priority = record.priority
        runAt = timestamp(record.runAt)
        leaseExpiresAt = record.leaseExpiresAt.map(timestamp)
        worker = record.worker
        uniqueKey = record.uniqueKey
        lastError = record.lastError
        cancellationRequested = record.lifecycle.isCancellationRequested
        createdAt = timestamp(record.createdAt)
        finishedAt = record.finishedAt.map(timestamp)
        if let text = String(data: record.payload, encoding: .utf8) {
            payload = text
            payloadEncoding = "utf8"
        } else {
            payload = record.payload.base64EncodedString()
            payloadEncoding = "base64"
        }
    }
}

/// A time as ISO 8601 in UTC, with milliseconds.
func timestamp(_ date: Date) -> String {
    date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
}

/// Prints `value` as pretty, key-sorted JSON.
func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Pads each column to its widest cell, for text tables.
func printTable(_ header: [String], _ rows: [[String]]) {
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    for row in [header] + rows {
        let cells = row.enumerated().map { column, cell in
            column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
        }
        print(cells.joined(separator: "  "))
    }
}

/// A job's record, or the tool's error naming the missing identifier.
func existingJob(_ id: JobID, in store: any JobStore) throws -> JobRecord {
    guard let record = try EventLoop.main.run(until: store.job(id)) else {
        throw ToolError(description: "no job has the id \(id.rawValue) in this database")
    }
    return record
}

// MARK: Commands

/// `flow-jobs list`: the jobs, filtered by state and queue.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Lists jobs, oldest first.")

    @OptionGroup var options: DatabaseOptions

    @Option(help: "Only jobs in this state: \(JobState.allCases.map(\.rawValue).joined(separator: ", ")).")
    var state: JobState?

    @Option(help: "Only jobs of this queue.")
    var queue: String?

    @Option(help: "The most jobs listed.")
    var limit = 100

    func validate() throws {
        guard limit >= 1 else { throw ValidationError("--limit must be at least 1, not \(limit).") }
    }

    func run() throws {
        let store = try options.openStore()
        let records = try EventLoop.main.run(until: store.jobs(state: state, queue: queue, limit: limit))
        if options.json { return try printJSON(records.map(JobSummary.init)) }
        printTable(
            ["ID", "NAME", "QUEUE", "STATE", "ATTEMPT", "RUN AT", "LAST ERROR"],
            records.map { record in
                [
                    String(record.id.rawValue), record.name, record.queue, record.state.rawValue,
                    "\(record.attempt)/\(record.lifecycle.maxAttempts)", timestamp(record.runAt),
                    record.lastError ?? "",
                ]
            })
    }
}

/// `flow-jobs inspect`: one job's whole record.
struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "inspect", abstract: "Shows one job's record.")

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The job's id.")
    var job: JobIdentifier

    func run() throws {
        let store = try options.openStore()
        let summary = JobSummary(try existingJob(job.id, in: store))
        if options.json { return try printJSON(summary) }
        let fields: [(String, String?)] = [
            ("id", String(summary.id)), ("name", summary.name), ("queue", summary.queue), ("state", summary.state),
            ("attempt", "\(summary.attempt) of \(summary.maxAttempts)"), ("priority", String(summary.priority)),
            ("run at", summary.runAt), ("lease expires at", summary.leaseExpiresAt), ("worker", summary.worker),
            ("unique key", summary.uniqueKey), ("last error", summary.lastError),
            ("cancellation requested", summary.cancellationRequested ? "yes" : nil),
            ("created at", summary.createdAt), ("finished at", summary.finishedAt),
            ("payload (\(summary.payloadEncoding))", summary.payload),
        ]
        for case (let label, let value?) in fields { print("\(label): \(value)") }
    }
}

/// `flow-jobs stats`: per queue, how many jobs are in each state, and how late the oldest due job is.
struct StatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats", abstract: "Counts jobs per queue and state, and shows each queue's lag.")

    @OptionGroup var options: DatabaseOptions

    /// One queue's figures.
    struct QueueStatistics: Codable {
        var queue: String
        var counts: [String: Int]
        var total: Int
        /// Seconds since the run time of the oldest due job not yet running (0 when none waits).
        var lagSeconds: Double
    }

    func run() throws {
        let store = try options.openStore()
        let now = Int64((store.clock.now().timeIntervalSince1970 * 1000).rounded())
        // The store protocol reads records, not aggregates: the counts come from the store's own
        // tables, in one read transaction. PostgreSQL keeps finished jobs in a table of their own.
        let jobs = options.isPostgres
            ? "(SELECT queue, state, run_at FROM flow_jobs UNION ALL SELECT queue, state, run_at FROM flow_jobs_history)"
            : "flow_jobs"
        let greatest = options.isPostgres ? "greatest" : "max"
        let rows = try EventLoop.main.run(until: store.transaction { transaction in
            try transaction.query(
                """
                SELECT queue, state, count(*),
                       \(greatest)(0, ? - min(CASE WHEN state IN ('available', 'scheduled', 'retryable') AND run_at <= ?
                                           THEN run_at END))
                FROM \(jobs) AS jobs GROUP BY queue, state ORDER BY queue, state
                """, [.integer(now), .integer(now)])
        })
        var statistics: [String: QueueStatistics] = [:]
        for row in rows {
            guard case .text(let queue) = row[0], case .text(let state) = row[1], case .integer(let count) = row[2]
            else { continue }
            var entry = statistics[queue] ?? QueueStatistics(queue: queue, counts: [:], total: 0, lagSeconds: 0)
            entry.counts[state] = Int(count)
            entry.total += Int(count)
            if case .integer(let lag) = row[3] { entry.lagSeconds = max(entry.lagSeconds, Double(lag) / 1000) }
            statistics[queue] = entry
        }
        let queues = statistics.values.sorted { $0.queue < $1.queue }
        if options.json { return try printJSON(queues) }
        let states = JobState.allCases.map(\.rawValue)
        printTable(
            ["QUEUE"] + states.map { $0.uppercased() } + ["TOTAL", "LAG"],
            queues.map { entry in
                [entry.queue] + states.map { String(entry.counts[$0] ?? 0) }
                    + [String(entry.total), String(format: "%.3f s", entry.lagSeconds)]
            })
    }
}

/// `flow-jobs retry`: runs a waiting job now, or enqueues a finished one again.
struct RetryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Runs a waiting job now, or enqueues a copy of a discarded, cancelled or quarantined job.",
        discussion: """
            A finished job stays as it is (nothing leaves a terminal state): its copy is a new job with the same \
            name, queue, payload, priority and attempts allowed, and a fresh attempt count.
            """)

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The job's id.")
    var job: JobIdentifier

    /// What the retry did, for `--json`.
    struct Answer: Codable {
        var id: Int64
        var action: String
        var newID: Int64?
    }

    func run() throws {
        let store = try options.openStore()
        let record = try existingJob(job.id, in: store)
        let answer: Answer
        switch record.state {
        case .scheduled, .retryable, .available:
            let id = record.id.rawValue
            let changed: Bool
            if let postgres = store as? PostgresJobStore {
                // Its commit also wakes the idle workers of other processes, as an enqueue's does.
                changed = try EventLoop.main.run(until: postgres.makeDueNow(record.id))
            } else {
                // SQLite's workers in other processes see the file change.
                let now = Int64((store.clock.now().timeIntervalSince1970 * 1000).rounded())
                changed = try EventLoop.main.run(until: store.transaction { transaction in
                    try transaction.execute(
                        """
                        UPDATE flow_jobs SET run_at = min(run_at, ?)
                        WHERE id = ? AND state IN ('scheduled', 'retryable', 'available')
                        """, [.integer(now), .integer(id)])
                }) == 1
            }
            guard changed else { throw ToolError(description: "job \(id) changed meanwhile; look again") }
            answer = Answer(id: id, action: "due now", newID: nil)
        case .running:
            throw ToolError(description: "job \(record.id.rawValue) is running; cancel it first to stop it")
        case .completed:
            throw ToolError(description: "job \(record.id.rawValue) completed; there is nothing to retry")
        case .discarded, .cancelled, .quarantined:
            let copy = NewJob(
                name: record.name, queue: record.queue, payload: record.payload, priority: record.priority,
                maxAttempts: record.lifecycle.maxAttempts)
            let enqueued = try EventLoop.main.run(until: store.enqueue([copy]))
            answer = Answer(id: record.id.rawValue, action: "enqueued again", newID: enqueued.first?.id.rawValue)
        }
        if options.json { return try printJSON(answer) }
        if let newID = answer.newID {
            print("job \(answer.id) (\(record.state.rawValue)) enqueued again as job \(newID)")
        } else {
            print("job \(answer.id) is due now")
        }
    }
}

/// `flow-jobs cancel`: cancels a queued job, or asks a running job's worker to stop it.
struct CancelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel", abstract: "Cancels a queued job, or asks the worker of a running job to stop it.")

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The job's id.")
    var job: JobIdentifier

    /// What the cancellation did, for `--json`.
    struct Answer: Codable {
        var id: Int64
        var result: String
    }

    func run() throws {
        let store = try options.openStore()
        let result: String
        switch try EventLoop.main.run(until: store.cancel(job.id)) {
        case .cancelled: result = "cancelled"
        case .requested: result = "requested"
        case .alreadyFinished(let state):
            throw ToolError(description: "job \(job.id.rawValue) had already finished: \(state.rawValue)")
        case .notFound: throw ToolError(description: "no job has the id \(job.id.rawValue) in this database")
        }
        if options.json { return try printJSON(Answer(id: job.id.rawValue, result: result)) }
        print(
            result == "cancelled"
                ? "job \(job.id.rawValue) cancelled"
                : "job \(job.id.rawValue) is running: its worker is asked to stop it")
    }
}

/// `flow-jobs discard`: gives up on a queued job for good.
struct DiscardCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discard", abstract: "Discards a queued job (scheduled, available or retryable): it will not run.")

    @OptionGroup var options: DatabaseOptions

    @Argument(help: "The job's id.")
    var job: JobIdentifier

    @Option(help: "The error recorded on the job.")
    var reason = "discarded with flow-jobs"

    func run() throws {
        let store = try options.openStore()
        let record = try existingJob(job.id, in: store)
        guard record.state.isClaimable else {
            throw ToolError(
                description: record.state == .running
                    ? "job \(record.id.rawValue) is running; cancel it instead"
                    : "job \(record.id.rawValue) has already finished: \(record.state.rawValue)")
        }
        let now = Int64((store.clock.now().timeIntervalSince1970 * 1000).rounded())
        let id = record.id.rawValue
        let reason = reason
        // Only while still queued: a worker may have claimed it since it was read.
        let isPostgres = options.isPostgres
        let changed = try EventLoop.main.run(until: store.transaction { transaction in
            guard isPostgres else {
                return try transaction.execute(
                    """
                    UPDATE flow_jobs SET state = 'discarded', finished_at = ?, last_error = ?, has_error = 1
                    WHERE id = ? AND state IN ('scheduled', 'available', 'retryable')
                    """, [.integer(now), .text(reason), .integer(id)])
            }
            // A finished job leaves PostgreSQL's table of unfinished jobs for the history table.
            let moved = try transaction.execute(
                """
                WITH moved AS (
                    DELETE FROM flow_jobs WHERE id = ? AND state IN ('scheduled', 'available', 'retryable') RETURNING *)
                INSERT INTO flow_jobs_history SELECT * FROM moved
                """, [.integer(id)])
            guard moved == 1 else { return moved }
            return try transaction.execute(
                """
                UPDATE flow_jobs_history SET state = 'discarded', finished_at = ?, last_error = ?, has_error = true
                WHERE id = ?
                """, [.integer(now), .text(reason), .integer(id)])
        })
        guard changed == 1 else { throw ToolError(description: "job \(id) was claimed meanwhile; cancel it instead") }
        if options.json { return try printJSON(["id": id]) }
        print("job \(id) discarded")
    }
}

/// `flow-jobs purge`: deletes finished jobs.
struct PurgeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge", abstract: "Deletes finished jobs (completed, discarded, cancelled, quarantined).")

    @OptionGroup var options: DatabaseOptions

    @Option(help: "Only jobs in this finished state.")
    var state: JobState?

    @Option(help: "Only jobs that finished at least this many seconds ago.")
    var olderThan: Double = 0

    func validate() throws {
        if let state, !state.isTerminal {
            throw ValidationError("--state must be a finished state (completed, discarded, cancelled, quarantined).")
        }
        guard olderThan >= 0, olderThan.isFinite else {
            throw ValidationError("--older-than must be zero or a positive number of seconds.")
        }
    }

    func run() throws {
        let store = try options.openStore()
        let cutoff = Int64(((store.clock.now().timeIntervalSince1970 - olderThan) * 1000).rounded())
        let states = (state.map { [$0] } ?? JobState.allCases.filter(\.isTerminal)).map { SQLValue.text($0.rawValue) }
        let placeholders = Array(repeating: "?", count: states.count).joined(separator: ", ")
        // PostgreSQL keeps finished jobs in a table of their own.
        let table = options.isPostgres ? "flow_jobs_history" : "flow_jobs"
        let deleted = try EventLoop.main.run(until: store.transaction { transaction in
            try transaction.execute(
                "DELETE FROM \(table) WHERE state IN (\(placeholders)) AND finished_at <= ?",
                states + [.integer(cutoff)])
        })
        if options.json { return try printJSON(["deleted": deleted]) }
        print("\(deleted) finished job\(deleted == 1 ? "" : "s") deleted")
    }
}
