import Dispatch
import Flow
import FlowJobs
import Foundation

/// A connection of the pool as synchronous code sees it, on a thread of libuv's pool: each statement
/// is sent through the connection on its loop and the calling thread waits for the answer. The loop
/// itself never waits; what waits is a pool thread running one transaction of the store.
final class PostgresSession {
    let connection: PostgresConnection
    /// What the transaction's commit tells this process's observers.
    var pendingNotifications: [JobStoreNotification] = []

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    /// Runs one statement and waits for its answer.
    @discardableResult
    func run(_ sql: String, _ arguments: [SQLValue] = []) throws(PostgresError) -> PostgresResult {
        misusePrecondition(
            !connection.loop.isInLoopContext,
            "a PostgreSQL transaction's statement was run on its store's loop, which would wait for itself")
        let answered = DispatchSemaphore(value: 0)
        let outcome = Locked<Swift.Result<PostgresResult, PostgresError>?>(nil)
        connection.send(sql, arguments) { result in
            outcome.withLock { $0 = result }
            answered.signal()
        }
        answered.wait()
        return try outcome.withLock { $0! }.get()
    }

    /// The rows of one query.
    func rows(_ sql: String, _ arguments: [SQLValue] = []) throws(PostgresError) -> [[SQLValue]] {
        try run(sql, arguments).rows
    }
}

/// A store transaction as a job's effects or a caller's own writes see it (`JobTransaction`):
/// SQL written with `?` placeholders, as for SQLite, runs with them numbered `$1`, `$2`, …
struct PostgresTransaction: JobTransaction {
    let session: PostgresSession
    let now: Int64
    let store: PostgresJobStore.Statements

    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int {
        try session.run(Self.numberingPlaceholders(sql), arguments).affectedRows
    }

    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [[SQLValue]] {
        try session.rows(Self.numberingPlaceholders(sql), arguments)
    }

    @discardableResult
    func enqueue(_ job: NewJob) throws -> EnqueuedJob {
        try store.insert(job, now: now, on: session)
    }

    /// `sql` with each `?` outside quotes and comments replaced by `$1`, `$2`, … in order. SQL that
    /// already numbers its parameters (`$1`) has no bare `?` and comes back unchanged.
    static func numberingPlaceholders(_ sql: String) -> String {
        guard sql.contains("?") else { return sql }
        var output = ""
        output.reserveCapacity(sql.utf8.count + 8)
        var number = 0
        var quote: Character?
        var inLineComment = false
        var previous: Character?
        for character in sql {
            defer { previous = character }
            if inLineComment {
                if character == "\n" { inLineComment = false }
                output.append(character)
                continue
            }
            if let open = quote {
                if character == open { quote = nil }
                output.append(character)
                continue
            }
            switch character {
            case "'", "\"":
                quote = character
                output.append(character)
            case "-" where previous == "-":
                inLineComment = true
                output.append(character)
            case "?":
                number += 1
                output += "$\(number)"
            default:
                output.append(character)
            }
        }
        return output
    }
}
