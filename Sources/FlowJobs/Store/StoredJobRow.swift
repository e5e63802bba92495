import Foundation

/// What every SQL store shares about a job's row: the order of its columns when a whole job is read,
/// and how a stored trace context is written and read. The SQLite store and the PostgreSQL store
/// (`FlowJobsPostgres`) select the same columns in the same order, so one decoder serves both.
package enum StoredJobRow {
    /// Decodes a row of the whole job's columns, in this order: `id, name, queue, payload, state,
    /// priority, run_at, attempt, max_attempts, fence, lease_expires_at, worker, lease_expiries,
    /// unique_key, last_error, has_error, cancel_requested, created_at, finished_at, trace_context,
    /// first_attempt_trace_context, timeout_ms`. Times are milliseconds since 1970; flags are 0 or 1.
    package static func record(_ row: [SQLValue]) -> JobRecord {
        func integer(_ column: Int) -> Int64 { row[column].integerValue ?? 0 }
        func date(_ column: Int) -> Date? { row[column].integerValue.map(Date.init(milliseconds:)) }
        let lifecycle = JobLifecycle(
            state: JobState(rawValue: row[4].textValue ?? "") ?? .discarded, attempt: Int(integer(7)),
            maxAttempts: Int(integer(8)), fence: integer(9), leaseExpiries: Int(integer(12)),
            hasRecordedError: integer(15) != 0, isCancellationRequested: integer(16) != 0)
        return JobRecord(
            id: JobID(rawValue: integer(0)), name: row[1].textValue ?? "", queue: row[2].textValue ?? "",
            payload: row[3].blobValue ?? Data(), lifecycle: lifecycle, priority: Int(integer(5)),
            runAt: Date(milliseconds: integer(6)), leaseExpiresAt: date(10), worker: row[11].textValue,
            uniqueKey: row[13].textValue, lastError: row[14].textValue, createdAt: Date(milliseconds: integer(17)),
            finishedAt: date(18), traceContext: decodeTraceContext(row[19]),
            firstAttemptTraceContext: decodeTraceContext(row[20]),
            timeout: row[21].integerValue.map { .milliseconds($0) })
    }

    /// A trace context's headers as a JSON object, or `NULL` when there are none.
    package static func encodeTraceContext(_ headers: [String: String]) -> SQLValue {
        guard !headers.isEmpty else { return .null }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(headers) else { return .null }
        return .text(String(decoding: data, as: UTF8.self))
    }

    /// The headers of a stored trace context; none when `NULL` or unreadable (a trace is never worth
    /// failing a job over).
    package static func decodeTraceContext(_ value: SQLValue) -> [String: String] {
        guard let text = value.textValue else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }
}

extension JobOutcome {
    /// What a running attempt of `record` ending with this outcome leaves: the job's next lifecycle,
    /// its run time (a retry's) and its last error. Throws the lifecycle's error when the outcome does
    /// not apply to the job's state.
    package func applied(to record: JobRecord) throws -> (lifecycle: JobLifecycle, runAt: Date, lastError: String?) {
        var lifecycle = record.lifecycle
        var runAt = record.runAt
        var lastError = record.lastError
        switch self {
        case .completed:
            try lifecycle.apply(.succeeded)
        case .failed(let error, let retryAt):
            try lifecycle.apply(.failed(error: error))
            lastError = error
            runAt = retryAt
        case .discarded(let error):
            try lifecycle.apply(.discarded(error: error))
            lastError = error
        case .cancelled:
            try lifecycle.apply(.stoppedByCancellation)
        }
        return (lifecycle, runAt, lastError)
    }
}

extension Date {
    /// Milliseconds since 1970, as the stores keep times.
    package var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    /// The time `milliseconds` after 1970.
    package init(milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension Duration {
    /// The duration in whole milliseconds, rounded up.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }

    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
