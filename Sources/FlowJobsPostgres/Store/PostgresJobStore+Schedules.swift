import Flow
import FlowJobs
import Foundation

extension PostgresJobStore {
    /// Fires a schedule's due and missed ticks in one transaction; see `JobStore/fireSchedule(_:)`.
    ///
    /// Every worker that declares the schedule fires it, in whichever process: firings of one schedule
    /// run one after the other (the first statement locks the schedule's row until the commit), and the
    /// later one finds the ticks recorded and fires nothing. A tick's row, keyed by (schedule, fire
    /// time), commits with its job; were two transactions to try one tick, the second's row would
    /// collide with the first's and roll its job back with it.
    public func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> {
        let statements = statements
        return inTransaction { session, now in
            let result = try firing.fire(on: PostgresScheduleStorage(session: session, statements: statements), now: now)
            try statements.notifyOtherProcesses(session)
            return result
        }
    }

    /// The schedules the store has seen fired, in name order; see `JobStore/schedules()`.
    public func schedules() -> Future<[ScheduleState]> {
        pool.withConnection(retriesLostConnection: true) { connection in
            connection.query("SELECT \(ScheduleState.columns) FROM flow_schedules ORDER BY name", [])
                .map(on: .none) { $0.rows.map(ScheduleState.init(row:)) }
        }
    }

    /// Pauses or resumes a schedule for every process; see `JobStore/setSchedulePaused(_:name:)`.
    ///
    /// A resumed schedule's ticks missed while it was paused are missed ticks: its catch-up policy
    /// decides which still fire, at its next tick.
    public func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?> {
        // Setting the flag again after a lost connection sets the same value.
        pool.withConnection(retriesLostConnection: true) { connection in
            connection.query(
                "UPDATE flow_schedules SET paused = $1 WHERE name = $2 RETURNING \(ScheduleState.columns)",
                [.text(isPaused ? "t" : "f"), .text(name)]
            ).map(on: .none) { $0.rows.first.map(ScheduleState.init(row:)) }
        }
    }
}

/// A schedule's firing steps in PostgreSQL's SQL, inside one transaction of the store.
struct PostgresScheduleStorage: ScheduleStorage {
    let session: PostgresSession
    let statements: PostgresJobStore.Statements

    func upsertSchedule(name: String, description: String, now: Int64) throws -> ScheduleState {
        // ON CONFLICT DO UPDATE locks the row (waiting for a firing in progress elsewhere) and answers
        // its latest version; the transaction's later statements see what that firing committed.
        guard
            let row = try session.rows(
                """
                INSERT INTO flow_schedules (name, description, created_at) VALUES ($1, $2, $3)
                ON CONFLICT (name) DO UPDATE SET description = excluded.description
                RETURNING \(ScheduleState.columns)
                """,
                [.text(name), .text(description), .integer(now)]
            ).first
        else { throw PostgresError.server(sqlState: "P0002", message: "the schedule \(name) vanished") }
        return ScheduleState(row: row)
    }

    func isUnfinished(_ id: JobID) throws -> Bool {
        try !session.rows(
            "SELECT 1 FROM flow_jobs WHERE id = $1 AND state IN ('scheduled', 'available', 'running', 'retryable')",
            [.integer(id.rawValue)]
        ).isEmpty
    }

    func insert(_ job: NewJob, now: Int64) throws -> EnqueuedJob {
        try statements.insert(job, now: now, on: session)
    }

    func isTickRecorded(schedule: String, fireAt: Int64) throws -> Bool {
        try !session.rows(
            "SELECT 1 FROM flow_schedule_ticks WHERE schedule = $1 AND fire_at = $2", [.text(schedule), .integer(fireAt)]
        ).isEmpty
    }

    func recordTick(schedule: String, fireAt: Int64, outcome: String, job: JobID?, now: Int64) throws {
        try session.run(
            "INSERT INTO flow_schedule_ticks (schedule, fire_at, outcome, job_id, recorded_at) VALUES ($1, $2, $3, $4, $5)",
            [.text(schedule), .integer(fireAt), .text(outcome), job.map { .integer($0.rawValue) } ?? .null, .integer(now)])
    }

    func markTickEnqueued(schedule: String, fireAt: Int64, job: JobID) throws {
        try session.run(
            "UPDATE flow_schedule_ticks SET outcome = 'enqueued', job_id = $1 WHERE schedule = $2 AND fire_at = $3",
            [.integer(job.rawValue), .text(schedule), .integer(fireAt)])
    }

    func pruneTicks(schedule: String, before: Int64, keeping: Int64?) throws {
        try session.run(
            "DELETE FROM flow_schedule_ticks WHERE schedule = $1 AND fire_at < $2 AND ($3::bigint IS NULL OR fire_at <> $3)",
            [.text(schedule), .integer(before), keeping.map(SQLValue.integer) ?? .null])
    }

    func updateSchedule(
        name: String, lastFiredAt: Int64?, nextFireAt: Int64?, lastJob: JobID?, deferredFireAt: Int64?
    ) throws -> ScheduleState {
        guard
            let row = try session.rows(
                """
                UPDATE flow_schedules SET last_fired_at = $1, next_fire_at = $2, last_job_id = $3,
                    deferred_fire_at = $4
                WHERE name = $5 RETURNING \(ScheduleState.columns)
                """,
                [
                    lastFiredAt.map(SQLValue.integer) ?? .null, nextFireAt.map(SQLValue.integer) ?? .null,
                    lastJob.map { .integer($0.rawValue) } ?? .null, deferredFireAt.map(SQLValue.integer) ?? .null,
                    .text(name),
                ]
            ).first
        else { throw PostgresError.server(sqlState: "P0002", message: "the schedule \(name) vanished") }
        return ScheduleState(row: row)
    }
}
