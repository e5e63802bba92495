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
            try Self.fire(firing, now: clock.now().milliseconds, on: connection)
        }
    }

    /// The schedules this store has fired, in name order; see ``JobStore/schedules()``.
    public func schedules() -> Future<[ScheduleState]> {
        writer.submit { connection in
            try connection.query("SELECT \(Self.scheduleColumns) FROM flow_schedules ORDER BY name").map(
                Self.decodeSchedule)
        }
    }

    /// Pauses or resumes a schedule for every process; see ``JobStore/setSchedulePaused(_:name:)``.
    ///
    /// A resumed schedule's ticks missed while it was paused are missed ticks: its catch-up policy
    /// decides which still fire, at its next tick.
    public func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?> {
        writer.submit { connection in
            try connection.query(
                "UPDATE flow_schedules SET paused = ? WHERE name = ? RETURNING \(Self.scheduleColumns)",
                [.integer(isPaused ? 1 : 0), .text(name)]
            ).first.map(Self.decodeSchedule)
        }
    }

    // MARK: SQL

    static let scheduleColumns = """
        name, description, last_fired_at, next_fire_at, paused, last_job_id, deferred_fire_at, created_at
        """

    static func decodeSchedule(_ row: [SQLValue]) -> ScheduleState {
        ScheduleState(
            name: row[0].textValue ?? "", description: row[1].textValue ?? "",
            lastFiredAt: row[2].integerValue.map(Date.init(milliseconds:)),
            nextFireAt: row[3].integerValue.map(Date.init(milliseconds:)), isPaused: row[4].integerValue == 1,
            lastJobID: row[5].integerValue.map(JobID.init(rawValue:)),
            deferredTick: row[6].integerValue.map(Date.init(milliseconds:)),
            createdAt: Date(milliseconds: row[7].integerValue ?? 0))
    }

    static func fire(
        _ firing: ScheduleFiring, now: Int64, on connection: SQLiteConnection
    ) throws(JobStoreError) -> ScheduleFiringResult {
        let name = SQLValue.text(firing.name)
        try connection.execute(
            """
            INSERT INTO flow_schedules (name, description, created_at) VALUES (?, ?, ?)
            ON CONFLICT (name) DO UPDATE SET description = excluded.description
            """,
            [name, .text(firing.schedule.description), .integer(now)])
        guard
            let before = try connection.query(
                "SELECT \(scheduleColumns) FROM flow_schedules WHERE name = ?", [name]
            ).first.map(decodeSchedule)
        else { throw .database(code: 0, message: "the schedule \(firing.name) vanished") }

        var lastJob = before.lastJobID
        var deferred = before.deferredTick
        var lastFired = before.lastFiredAt
        var previousIsUnfinished = try lastJob.map { id throws(JobStoreError) in try isUnfinished(id, on: connection) }
            ?? false

        // A tick that waited for the previous job is enqueued once that job has finished.
        var promoted: ScheduleTick?
        if let tick = deferred, !previousIsUnfinished {
            let enqueued = try insert(firing.job(forTick: tick), now: now, on: connection)
            try connection.execute(
                "UPDATE flow_schedule_ticks SET outcome = 'enqueued', job_id = ? WHERE schedule = ? AND fire_at = ?",
                [.integer(enqueued.id.rawValue), name, .integer(tick.milliseconds)])
            promoted = ScheduleTick(fireTime: tick, outcome: .enqueued(enqueued.id))
            lastJob = enqueued.id
            deferred = nil
            previousIsUnfinished = !enqueued.state.isTerminal
        }

        var fired: [ScheduleTick] = []
        if !before.isPaused {
            let watermark = lastFired ?? before.createdAt
            // The caller's tick, fired already by another worker (it is not later than the last fired tick).
            if let due = firing.dueTick, due <= watermark, lastFired != nil {
                fired.append(ScheduleTick(fireTime: due, outcome: .alreadyFired))
            }
            for tick in firing.ticks(lastFired: watermark, now: Date(milliseconds: now)) {
                let fireAt = tick.milliseconds
                let isRecorded = try !connection.query(
                    "SELECT 1 FROM flow_schedule_ticks WHERE schedule = ? AND fire_at = ?", [name, .integer(fireAt)]
                ).isEmpty
                if isRecorded || fireAt <= (lastFired?.milliseconds ?? Int64.min) {
                    fired.append(ScheduleTick(fireTime: tick, outcome: .alreadyFired))
                    continue
                }
                let outcome: ScheduleTickOutcome
                switch (firing.overlap, previousIsUnfinished ? lastJob : nil) {
                case (.skip, let previous?):
                    outcome = .skipped(previous: previous)
                case (.queueOne, let previous?) where deferred == nil:
                    outcome = .deferred(previous: previous)
                    deferred = tick
                case (.queueOne, let previous?):
                    outcome = .skipped(previous: previous)
                default:
                    let enqueued = try insert(firing.job(forTick: tick), now: now, on: connection)
                    outcome = .enqueued(enqueued.id)
                    lastJob = enqueued.id
                    previousIsUnfinished = !enqueued.state.isTerminal
                }
                try record(outcome, of: firing.name, at: fireAt, now: now, on: connection)
                fired.append(ScheduleTick(fireTime: tick, outcome: outcome))
                lastFired = tick
            }
        }

        // Tick rows behind the last fired tick are no longer needed to keep a tick from firing twice
        // (the last fired tick does that); they are kept for the retention, for inspection.
        if let lastFired {
            let deferredValue = deferred.map { SQLValue.integer($0.milliseconds) } ?? .null
            try connection.execute(
                "DELETE FROM flow_schedule_ticks WHERE schedule = ? AND fire_at < ? AND (? IS NULL OR fire_at <> ?)",
                [
                    name, .integer(lastFired.milliseconds - firing.tickRetention.milliseconds), deferredValue,
                    deferredValue,
                ])
        }
        let next = firing.schedule.nextFireTime(after: max(Date(milliseconds: now), lastFired ?? .distantPast))
        guard
            let state = try connection.query(
                """
                UPDATE flow_schedules SET last_fired_at = ?, next_fire_at = ?, last_job_id = ?, deferred_fire_at = ?
                WHERE name = ? RETURNING \(scheduleColumns)
                """,
                [
                    lastFired.map { .integer($0.milliseconds) } ?? .null,
                    next.map { .integer($0.milliseconds) } ?? .null,
                    lastJob.map { .integer($0.rawValue) } ?? .null, deferred.map { .integer($0.milliseconds) } ?? .null,
                    name,
                ]
            ).first.map(decodeSchedule)
        else { throw .database(code: 0, message: "the schedule \(firing.name) vanished") }
        return ScheduleFiringResult(ticks: fired, promoted: promoted, state: state)
    }

    private static func isUnfinished(_ id: JobID, on connection: SQLiteConnection) throws(JobStoreError) -> Bool {
        try !connection.query(
            "SELECT 1 FROM flow_jobs WHERE id = ? AND state IN \(unfinishedStates)", [.integer(id.rawValue)]
        ).isEmpty
    }

    private static func record(
        _ outcome: ScheduleTickOutcome, of schedule: String, at fireAt: Int64, now: Int64,
        on connection: SQLiteConnection
    ) throws(JobStoreError) {
        let (text, job): (String, JobID?) =
            switch outcome {
            case .enqueued(let id): ("enqueued", id)
            case .skipped: ("skipped", nil)
            case .deferred: ("deferred", nil)
            case .alreadyFired: preconditionFailure("an already fired tick is not recorded again")
            }
        try connection.execute(
            "INSERT INTO flow_schedule_ticks (schedule, fire_at, outcome, job_id, recorded_at) VALUES (?, ?, ?, ?, ?)",
            [.text(schedule), .integer(fireAt), .text(text), job.map { .integer($0.rawValue) } ?? .null, .integer(now)])
    }
}
