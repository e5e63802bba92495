import Flow
import FlowJobs
import Foundation

extension PostgresJobStore {
    /// Fires a schedule's due and missed ticks; see `JobStore/fireSchedule(_:)`.
    ///
    /// Every worker that declares the schedule fires it, in whichever process. A timer's tick that is the
    /// only one due, fired against the schedule's state as this store last left it, is one statement:
    /// it moves the schedule on, records the tick under its key (schedule, fire time), enqueues the
    /// tick's job and notifies, all on the condition that the schedule's row still holds that last fired
    /// tick, is not paused, has no waiting tick and, unless the schedule runs jobs alongside, that the
    /// previous tick's job has finished. A worker that finds the tick fired by another (the row moved on)
    /// reads the row and is answered `alreadyFired`, with no transaction. Anything else (catching up, a
    /// paused or waiting schedule, an unfinished previous job, a state this store has not seen) fires in
    /// one transaction with the steps every store shares: the first statement locks the schedule's row
    /// until the commit, so firings of one schedule run one after the other, and the later one finds the
    /// ticks recorded and fires nothing. A tick's row commits with its job; were two firings to try one
    /// tick, the second's row would collide with the first's and roll its job back with it.
    public func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> {
        let now = clock.now().milliseconds
        let known = lastFiredSchedules.withLock { $0[firing.name] }
        guard let known, let statement = firing.oneStatementFiring(after: known, now: now, statements: statements)
        else { return fireInTransaction(firing) }
        let name = firing.name
        let queue = firing.job.queue
        return pool.withConnection { connection -> Future<ScheduleFiringResult?> in
            connection.query(statement.sql, statement.arguments, prepared: true).flatMap(on: .none) { result in
                if let row = result.rows.first {
                    let state = ScheduleState(row: row)
                    let id = state.lastJobID ?? JobID(rawValue: 0)
                    return Future(
                        ScheduleFiringResult(
                            ticks: [ScheduleTick(fireTime: statement.tick, outcome: .enqueued(id))], promoted: nil,
                            state: state))
                }
                // The row moved on: another firing got the tick first, or the schedule changed.
                return connection.query(
                    "SELECT \(ScheduleState.columns) FROM flow_schedules WHERE name = $1", [.text(name)], prepared: true
                ).map(on: .none) { read in
                    read.rows.first.flatMap { firing.alreadyFiredResult(state: ScheduleState(row: $0), now: now) }
                }
            }
        }.flatMapResult(on: .none) { [self] outcome -> Future<ScheduleFiringResult> in
            // A failed statement (a lost connection, say) may or may not have committed: the transaction
            // reads what the server holds and fires what is still due.
            guard case .success(let fired?) = outcome else { return fireInTransaction(firing) }
            lastFiredSchedules.withLock { $0[name] = fired.state }
            if fired.ticks.contains(where: { if case .enqueued = $0.outcome { true } else { false } }) {
                publish([.enqueued(queues: [queue])])
            }
            return Future(fired)
        }
    }

    /// Fires the schedule in one transaction with ``ScheduleFiring``'s steps.
    private func fireInTransaction(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> {
        let statements = statements
        let name = firing.name
        scheduleFiringsInTransaction.withLock { $0 += 1 }
        return inTransaction { session, now in
            let result = try firing.fire(on: PostgresScheduleStorage(session: session, statements: statements), now: now)
            try statements.notifyOtherProcesses(session)
            return result
        }.map(on: .none) { [weak self] result in
            self?.lastFiredSchedules.withLock { $0[name] = result.state }
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

extension ScheduleFiring {
    /// A timer's tick fired in one statement, and the tick.
    struct OneStatementFiring {
        let sql: String
        let arguments: [SQLValue]
        let tick: Date
    }

    /// The one statement that fires the due tick when it is the only tick the steps of
    /// ``fire(on:now:)`` would fire from `known` (the schedule's last fired tick, not paused, no waiting
    /// tick): it does what they would do (moves the schedule on, records the tick, enqueues its job,
    /// prunes old tick rows, notifies other processes) only if the row still says so, and answers the
    /// row (no row: the condition did not hold, and nothing changed). `nil` when the tick is not alone.
    func oneStatementFiring(after known: ScheduleState, now: Int64, statements: PostgresJobStore.Statements)
        -> OneStatementFiring?
    {
        guard let tick = dueTick, let lastFired = known.lastFiredAt, !known.isPaused, known.deferredTick == nil,
            ticks(lastFired: lastFired, now: Date(milliseconds: now)) == [tick]
        else { return nil }
        // After the tick too: a tick fired early (``earlyAllowance``) is still ahead of `now`.
        let next = schedule.nextFireTime(after: max(Date(milliseconds: now), tick))
        let job = job(forTick: tick, now: Date(milliseconds: now))
        let runAt = job.runAt?.milliseconds ?? now
        let lifecycle = JobLifecycle(isDue: runAt <= now, maxAttempts: job.maxAttempts)
        // The job's id is drawn in the update, so that the schedule's row, the tick's row and the job
        // all name it in one statement; the job's insert and the tick's row exist only if the update
        // matched. A tick's row or job key committed meanwhile fails the statement as a whole.
        let sql = """
            WITH fired AS (
                UPDATE flow_schedules SET description = $2::text, last_fired_at = $3::bigint,
                    next_fire_at = $4::bigint, last_job_id = nextval(pg_get_serial_sequence('flow_jobs', 'id'))
                WHERE name = $1::text AND NOT paused AND deferred_fire_at IS NULL AND last_fired_at = $5::bigint
                    AND ($6::boolean OR last_job_id IS NULL OR NOT EXISTS (
                        SELECT 1 FROM flow_jobs WHERE flow_jobs.id = flow_schedules.last_job_id
                            AND flow_jobs.state IN ('scheduled', 'available', 'running', 'retryable')))
                RETURNING \(ScheduleState.columns)),
            job AS (
                INSERT INTO flow_jobs (
                    id, name, queue, payload, state, priority, run_at, max_attempts, unique_key, created_at,
                    trace_context, timeout_ms)
                SELECT last_job_id, $7::text, $8::text, $9::bytea, $10::text, $11::int, $20::bigint, $13::int,
                    $14::text, $12::bigint, $15::text, $16::bigint
                FROM fired),
            tick AS (
                INSERT INTO flow_schedule_ticks (schedule, fire_at, outcome, job_id, recorded_at)
                SELECT name, $3::bigint, 'enqueued', last_job_id, $12::bigint FROM fired),
            pruned AS (
                DELETE FROM flow_schedule_ticks
                WHERE schedule = $1::text AND fire_at < $17::bigint AND EXISTS (SELECT 1 FROM fired)),
            notified AS (SELECT count(pg_notify($18::text, $19::text)) FROM fired)
            SELECT fired.* FROM fired, notified
            """
        return OneStatementFiring(
            sql: sql,
            arguments: [
                .text(name), .text(schedule.description), .integer(tick.milliseconds),
                next.map { .integer($0.milliseconds) } ?? .null, .integer(lastFired.milliseconds),
                .text(overlap == .runAlongside ? "t" : "f"), .text(job.name), .text(job.queue), .blob(job.payload),
                .text(lifecycle.state.rawValue), .integer(Int64(job.priority)), .integer(now),
                .integer(Int64(job.maxAttempts)), job.uniqueKey.map(SQLValue.text) ?? .null,
                StoredJobRow.encodeTraceContext(job.traceContext),
                job.timeout.map { .integer($0.milliseconds) } ?? .null,
                .integer(tick.milliseconds - tickRetention.milliseconds), .text(statements.channel),
                .text("\(statements.instance) e \(job.queue)"), .integer(runAt),
            ],
            tick: tick)
    }

    /// What the steps of ``fire(on:now:)`` would answer for the due tick, given the schedule's `state`
    /// written by another worker's firing of it: ``ScheduleTickOutcome/alreadyFired``, and nothing else
    /// due. `nil` when they would do more (a tick still due, a waiting tick, a pause).
    func alreadyFiredResult(state: ScheduleState, now: Int64) -> ScheduleFiringResult? {
        guard let tick = dueTick, let lastFired = state.lastFiredAt, tick <= lastFired, !state.isPaused,
            state.deferredTick == nil, state.description == schedule.description,
            ticks(lastFired: lastFired, now: Date(milliseconds: now)).isEmpty
        else { return nil }
        return ScheduleFiringResult(
            ticks: [ScheduleTick(fireTime: tick, outcome: .alreadyFired)], promoted: nil, state: state)
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
