import Foundation

/// The SQL steps a store runs, inside one of its transactions, to fire a schedule: every store
/// implements these with its own SQL, and ``ScheduleFiring/fire(on:now:)`` decides with them which
/// ticks enqueue, skip or wait, the same way in every store.
///
/// The tables are those of the SQLite and PostgreSQL stores: `flow_schedules` (one row per schedule:
/// its last fired tick, paused flag, last job, waiting tick) and `flow_schedule_ticks` (one row per
/// fired tick, keyed by schedule and fire time).
package protocol ScheduleStorage {
    /// What the store's statements throw.
    associatedtype Failure: Error

    /// Adds the schedule's row when the store has not seen it (created `now`), or updates its
    /// description, and answers its state. The row stays locked against other firings of the schedule
    /// until the transaction ends, so that they run one after the other.
    func upsertSchedule(name: String, description: String, now: Int64) throws(Failure) -> ScheduleState

    /// Whether the job `id` exists and is unfinished (waiting, running or waiting for a retry).
    func isUnfinished(_ id: JobID) throws(Failure) -> Bool

    /// Enqueues `job` in the transaction, as the store's enqueue does.
    func insert(_ job: NewJob, now: Int64) throws(Failure) -> EnqueuedJob

    /// Whether the schedule's tick at `fireAt` has a row.
    func isTickRecorded(schedule: String, fireAt: Int64) throws(Failure) -> Bool

    /// Adds the tick's row; `outcome` is `enqueued`, `skipped` or `deferred`, `job` the enqueued job.
    func recordTick(schedule: String, fireAt: Int64, outcome: String, job: JobID?, now: Int64) throws(Failure)

    /// Marks a deferred tick's row as enqueued with `job`.
    func markTickEnqueued(schedule: String, fireAt: Int64, job: JobID) throws(Failure)

    /// Deletes the schedule's tick rows before `before`, except the one at `keeping`.
    func pruneTicks(schedule: String, before: Int64, keeping: Int64?) throws(Failure)

    /// Writes the schedule's state after a firing and answers it.
    func updateSchedule(
        name: String, lastFiredAt: Int64?, nextFireAt: Int64?, lastJob: JobID?, deferredFireAt: Int64?
    ) throws(Failure) -> ScheduleState
}

extension ScheduleFiring {
    /// Fires the schedule's ticks with `storage`'s statements, in the caller's transaction; see
    /// ``JobStore/fireSchedule(_:)``.
    ///
    /// A tick is fired once: its row (keyed by schedule and fire time) commits with its job, and the
    /// schedule's last fired tick only moves forward, so a tick at or before it fires nothing even once
    /// its row is pruned. A tick whose overlap policy keeps it from enqueueing is recorded all the same
    /// (skipped, or deferred), so that no other worker enqueues it either.
    package func fire<Storage: ScheduleStorage>(
        on storage: Storage, now: Int64
    ) throws(Storage.Failure) -> ScheduleFiringResult {
        let before = try storage.upsertSchedule(name: name, description: schedule.description, now: now)

        var lastJob = before.lastJobID
        var deferred = before.deferredTick
        var lastFired = before.lastFiredAt
        var previousIsUnfinished = false
        if let lastJob { previousIsUnfinished = try storage.isUnfinished(lastJob) }

        // A tick that waited for the previous job is enqueued once that job has finished.
        var promoted: ScheduleTick?
        if let tick = deferred, !previousIsUnfinished {
            let enqueued = try storage.insert(job(forTick: tick, now: Date(milliseconds: now)), now: now)
            try storage.markTickEnqueued(schedule: name, fireAt: tick.milliseconds, job: enqueued.id)
            promoted = ScheduleTick(fireTime: tick, outcome: .enqueued(enqueued.id))
            lastJob = enqueued.id
            deferred = nil
            previousIsUnfinished = !enqueued.state.isTerminal
        }

        var fired: [ScheduleTick] = []
        if !before.isPaused {
            let watermark = lastFired ?? before.createdAt
            // The caller's tick, fired already by another worker (it is not later than the last fired tick).
            if let due = dueTick, due <= watermark, lastFired != nil {
                fired.append(ScheduleTick(fireTime: due, outcome: .alreadyFired))
            }
            for tick in ticks(lastFired: watermark, now: Date(milliseconds: now)) {
                let fireAt = tick.milliseconds
                if try storage.isTickRecorded(schedule: name, fireAt: fireAt)
                    || fireAt <= (lastFired?.milliseconds ?? Int64.min)
                {
                    fired.append(ScheduleTick(fireTime: tick, outcome: .alreadyFired))
                    continue
                }
                let outcome: ScheduleTickOutcome
                switch (overlap, previousIsUnfinished ? lastJob : nil) {
                case (.skip, let previous?):
                    outcome = .skipped(previous: previous)
                case (.queueOne, let previous?) where deferred == nil:
                    outcome = .deferred(previous: previous)
                    deferred = tick
                case (.queueOne, let previous?):
                    outcome = .skipped(previous: previous)
                default:
                    let enqueued = try storage.insert(job(forTick: tick, now: Date(milliseconds: now)), now: now)
                    outcome = .enqueued(enqueued.id)
                    lastJob = enqueued.id
                    previousIsUnfinished = !enqueued.state.isTerminal
                }
                let (text, job): (String, JobID?) =
                    switch outcome {
                    case .enqueued(let id): ("enqueued", id)
                    case .skipped: ("skipped", nil)
                    case .deferred: ("deferred", nil)
                    case .alreadyFired: preconditionFailure("an already fired tick is not recorded again")
                    }
                try storage.recordTick(schedule: name, fireAt: fireAt, outcome: text, job: job, now: now)
                fired.append(ScheduleTick(fireTime: tick, outcome: outcome))
                lastFired = tick
            }
        }

        // Tick rows behind the last fired tick are no longer needed to keep a tick from firing twice
        // (the last fired tick does that); they are kept for the retention, for inspection.
        if let lastFired {
            try storage.pruneTicks(
                schedule: name, before: lastFired.milliseconds - tickRetention.milliseconds,
                keeping: deferred?.milliseconds)
        }
        // After the last fired tick too: a tick fired early (``earlyAllowance``) is still ahead of `now`.
        let next = schedule.nextFireTime(after: max(Date(milliseconds: now), lastFired ?? .distantPast))
        let state = try storage.updateSchedule(
            name: name, lastFiredAt: lastFired?.milliseconds, nextFireAt: next?.milliseconds, lastJob: lastJob,
            deferredFireAt: deferred?.milliseconds)
        return ScheduleFiringResult(ticks: fired, promoted: promoted, state: state)
    }
}

extension ScheduleState {
    /// The columns of `flow_schedules` that ``init(row:)`` decodes, in its order.
    package static let columns = """
        name, description, last_fired_at, next_fire_at, paused, last_job_id, deferred_fire_at, created_at
        """

    /// A schedule's state from a row of ``columns``.
    package init(row: [SQLValue]) {
        self.init(
            name: row[0].textValue ?? "", description: row[1].textValue ?? "",
            lastFiredAt: row[2].integerValue.map(Date.init(milliseconds:)),
            nextFireAt: row[3].integerValue.map(Date.init(milliseconds:)), isPaused: row[4].integerValue == 1,
            lastJobID: row[5].integerValue.map(JobID.init(rawValue:)),
            deferredTick: row[6].integerValue.map(Date.init(milliseconds:)),
            createdAt: Date(milliseconds: row[7].integerValue ?? 0))
    }
}
