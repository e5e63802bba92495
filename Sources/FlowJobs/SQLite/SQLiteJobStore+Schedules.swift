import Flow
import Foundation

extension SQLiteJobStore {
    /// Fires a schedule's ticks in one transaction of the writer; see ``JobStore/fireSchedule(_:)``.
    ///
    /// A tick is fired once: its row in `flow_schedule_ticks` (keyed by schedule and fire time) commits
    /// with its job, and the schedule's last fired tick only moves forward, so a tick at or before it
    /// fires nothing even once its row is pruned. A tick whose overlap policy keeps it from enqueueing is
    /// recorded all the same (skipped, or deferred), so that no other worker enqueues it either.
    public func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> {
        let clock = clock
        return writer.submit { connection in
            try firing.fire(on: SQLiteScheduleStorage(connection: connection), now: clock.now().milliseconds)
        }
    }

    /// The schedules this store has fired, in name order; see ``JobStore/schedules()``.
    public func schedules() -> Future<[ScheduleState]> {
        writer.submit { connection in
            try connection.query("SELECT \(ScheduleState.columns) FROM flow_schedules ORDER BY name").map(
                ScheduleState.init(row:))
        }
    }

    /// Pauses or resumes a schedule for every process; see ``JobStore/setSchedulePaused(_:name:)``.
    ///
    /// A resumed schedule's ticks missed while it was paused are missed ticks: its catch-up policy
    /// decides which still fire, at its next tick.
    public func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?> {
        writer.submit { connection in
            try connection.query(
                "UPDATE flow_schedules SET paused = ? WHERE name = ? RETURNING \(ScheduleState.columns)",
                [.integer(isPaused ? 1 : 0), .text(name)]
            ).first.map(ScheduleState.init(row:))
        }
    }
}

/// A schedule's firing steps in SQLite's SQL, on the writer's connection (which alone writes, so
/// firings of a schedule already run one after the other).
struct SQLiteScheduleStorage: ScheduleStorage {
    let connection: SQLiteConnection

    func upsertSchedule(name: String, description: String, now: Int64) throws(JobStoreError) -> ScheduleState {
        try connection.execute(
            """
            INSERT INTO flow_schedules (name, description, created_at) VALUES (?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET description = excluded.description
            """,
            [.text(name), .text(description), .integer(now)])
        guard
            let state = try connection.query(
                "SELECT \(ScheduleState.columns) FROM flow_schedules WHERE name = ?", [.text(name)]
            ).first.map(ScheduleState.init(row:))
        else { throw .database(code: 0, message: "the schedule \(name) vanished") }
        return state
    }

    func isUnfinished(_ id: JobID) throws(JobStoreError) -> Bool {
        try !connection.query(
            "SELECT 1 FROM flow_jobs WHERE id = ? AND state IN \(SQLiteJobStore.unfinishedStates)",
            [.integer(id.rawValue)]
        ).isEmpty
    }

    func insert(_ job: NewJob, now: Int64) throws(JobStoreError) -> EnqueuedJob {
        try SQLiteJobStore.insert(job, now: now, on: connection)
    }

    func isTickRecorded(schedule: String, fireAt: Int64) throws(JobStoreError) -> Bool {
        try !connection.query(
            "SELECT 1 FROM flow_schedule_ticks WHERE schedule = ? AND fire_at = ?", [.text(schedule), .integer(fireAt)]
        ).isEmpty
    }

    func recordTick(schedule: String, fireAt: Int64, outcome: String, job: JobID?, now: Int64) throws(JobStoreError) {
        try connection.execute(
            "INSERT INTO flow_schedule_ticks (schedule, fire_at, outcome, job_id, recorded_at) VALUES (?, ?, ?, ?, ?)",
            [.text(schedule), .integer(fireAt), .text(outcome), job.map { .integer($0.rawValue) } ?? .null, .integer(now)])
    }

    func markTickEnqueued(schedule: String, fireAt: Int64, job: JobID) throws(JobStoreError) {
        try connection.execute(
            "UPDATE flow_schedule_ticks SET outcome = 'enqueued', job_id = ? WHERE schedule = ? AND fire_at = ?",
            [.integer(job.rawValue), .text(schedule), .integer(fireAt)])
    }

    func pruneTicks(schedule: String, before: Int64, keeping: Int64?) throws(JobStoreError) {
        let kept = keeping.map(SQLValue.integer) ?? .null
        try connection.execute(
            "DELETE FROM flow_schedule_ticks WHERE schedule = ? AND fire_at < ? AND (? IS NULL OR fire_at <> ?)",
            [.text(schedule), .integer(before), kept, kept])
    }

    func updateSchedule(
        name: String, lastFiredAt: Int64?, nextFireAt: Int64?, lastJob: JobID?, deferredFireAt: Int64?
    ) throws(JobStoreError) -> ScheduleState {
        guard
            let state = try connection.query(
                """
                UPDATE flow_schedules SET last_fired_at = ?, next_fire_at = ?, last_job_id = ?, deferred_fire_at = ?
                WHERE name = ? RETURNING \(ScheduleState.columns)
                """,
                [
                    lastFiredAt.map(SQLValue.integer) ?? .null, nextFireAt.map(SQLValue.integer) ?? .null,
                    lastJob.map { .integer($0.rawValue) } ?? .null, deferredFireAt.map(SQLValue.integer) ?? .null,
                    .text(name),
                ]
            ).first.map(ScheduleState.init(row:))
        else { throw .database(code: 0, message: "the schedule \(name) vanished") }
        return state
    }
}
