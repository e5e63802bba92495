import Flow
import Foundation

extension JobSchedule {
    /// What a tick does while the job of the schedule's previous tick is still unfinished (waiting,
    /// running or waiting for a retry).
    ///
    /// ```swift
    /// try worker.schedule("report", nightly, job: buildReport, payload: Report(), overlap: .queueOne)
    /// ```
    public enum Overlap: String, Hashable, Sendable {
        /// The tick is recorded as skipped and enqueues nothing.
        case skip
        /// The tick waits, and its job is enqueued once the previous tick's job has finished; at most one
        /// tick waits, and further ticks meanwhile are skipped.
        case queueOne
        /// The tick's job is enqueued at once, to run beside the previous one.
        case runAlongside
    }
}

/// One schedule's ticks, as a worker asks a store to fire them: the store enqueues each tick's job
/// exactly once, keyed by (schedule name, fire time), whatever the number of workers and processes.
///
/// A ``JobWorker`` builds these from its declared schedules (``JobWorker/schedule(_:_:job:payload:overlap:catchUp:)``);
/// stores read them in ``JobStore/fireSchedule(_:)``.
public struct ScheduleFiring: Sendable {
    /// The schedule's name, unique in the store.
    public var name: String
    /// When it fires.
    public var schedule: JobSchedule
    /// The job each tick enqueues (its run time and unique key are set per tick).
    public var job: NewJob
    /// What a tick does while the previous tick's job is unfinished.
    public var overlap: JobSchedule.Overlap
    /// Which ticks missed while no scheduler ran (or while the schedule was paused) still fire.
    public var catchUp: JobSchedule.CatchUp
    /// The tick a worker's timer was armed for, or `nil` when the worker only catches up (at start,
    /// or after a job of the schedule finished).
    public var dueTick: Date?
    /// How long records of fired ticks are kept behind the last fired tick; a day by default.
    public var tickRetention: Duration
    /// How long before its instant ``dueTick`` may fire; none by default, at most
    /// ``maximumEarlyAllowance``.
    ///
    /// A tick fired early enqueues its job to run at the tick's instant (a scheduled job), so that a
    /// worker claiming jobs ahead of their run times starts it then, with no store round trip left at
    /// the tick. Everything the store decides at the firing (the overlap policy's look at the previous
    /// tick's job, a pause) it decides up to this allowance before the tick. The allowance applies only
    /// with a due tick: a catch-up firing (no due tick) fires no tick before its instant.
    public var earlyAllowance: Duration {
        didSet { Self.checkEarlyAllowance(earlyAllowance, name: name) }
    }

    /// The longest ``earlyAllowance``: a second, the shortest interval between a schedule's ticks, so
    /// that no tick fires before the tick ahead of it has come.
    public static let maximumEarlyAllowance: Duration = .seconds(1)

    /// Describes a schedule's firing.
    ///
    /// - Parameters:
    ///   - name: the schedule's name.
    ///   - schedule: when it fires.
    ///   - job: the job each tick enqueues.
    ///   - overlap: what a tick does while the previous tick's job is unfinished.
    ///   - catchUp: which missed ticks still fire.
    ///   - dueTick: the tick the caller's timer was armed for, if any.
    ///   - tickRetention: how long tick records are kept behind the last fired tick.
    ///   - earlyAllowance: how long before its instant the due tick may fire; none by default.
    public init(
        name: String, schedule: JobSchedule, job: NewJob, overlap: JobSchedule.Overlap,
        catchUp: JobSchedule.CatchUp, dueTick: Date? = nil, tickRetention: Duration = .seconds(86_400),
        earlyAllowance: Duration = .zero
    ) {
        misusePrecondition(!name.isEmpty, "ScheduleFiring: the schedule's name must not be empty")
        misusePrecondition(tickRetention >= .zero, "ScheduleFiring \(name): the tick retention must not be negative")
        Self.checkEarlyAllowance(earlyAllowance, name: name)
        self.name = name
        self.schedule = schedule
        self.job = job
        self.overlap = overlap
        self.catchUp = catchUp
        self.dueTick = dueTick
        self.tickRetention = tickRetention
        self.earlyAllowance = earlyAllowance
    }

    private static func checkEarlyAllowance(_ allowance: Duration, name: String) {
        misusePrecondition(
            allowance >= .zero && allowance <= maximumEarlyAllowance,
            "ScheduleFiring \(name): the early allowance \(allowance) must be between zero and "
                + "\(maximumEarlyAllowance)")
    }

    /// The ticks to fire now, oldest first, given the last tick the store fired (or, before the first, when
    /// it first saw the schedule): the missed ticks the catch-up policy keeps, and the due tick when it is
    /// later than `lastFired` and not later than `now`.
    ///
    /// With a due tick, "now" is `now` plus ``earlyAllowance``: the firing is what it would be at that
    /// instant, the due tick counted among the ticks the catch-up policy keeps, as it is at the tick.
    ///
    /// Every store computes them with this function, so every scheduler agrees on them.
    public func ticks(lastFired: Date, now: Date) -> [Date] {
        // In whole milliseconds, as stores keep times: a tick is not missed by a rounding of `Date`.
        let horizon = dueTick == nil ? now : Date(milliseconds: now.milliseconds + earlyAllowance.milliseconds)
        var ticks = schedule.missedTicks(after: lastFired, through: horizon, catchUp: catchUp)
        if let dueTick, dueTick > lastFired, dueTick <= horizon, !ticks.contains(dueTick) {
            ticks.append(dueTick)
            ticks.sort()
        }
        return ticks
    }

    /// The job of the tick at `fireTime`: ``job`` with the tick's unique key, due at once.
    public func job(forTick fireTime: Date) -> NewJob {
        var job = job
        job.runAt = nil
        job.uniqueKey = Self.uniqueKey(schedule: name, fireTime: fireTime)
        return job
    }

    /// The job of the tick at `fireTime`, fired at `now`: ``job(forTick:)``, to run at the tick's instant
    /// when that is still ahead (a tick fired early, within ``earlyAllowance``), at once otherwise.
    public func job(forTick fireTime: Date, now: Date) -> NewJob {
        var job = job(forTick: fireTime)
        if fireTime > now { job.runAt = fireTime }
        return job
    }

    /// The unique key a tick's job carries: `flow.schedule/<name>/<fire time in milliseconds since 1970>`.
    public static func uniqueKey(schedule name: String, fireTime: Date) -> String {
        "\(uniqueKeyPrefix(schedule: name))\(fireTime.milliseconds)"
    }

    /// The start of every unique key of `name`'s tick jobs.
    public static func uniqueKeyPrefix(schedule name: String) -> String { "flow.schedule/\(name)/" }
}

/// What a store did with one tick.
public enum ScheduleTickOutcome: Sendable, Hashable {
    /// The tick's job was enqueued.
    case enqueued(JobID)
    /// The tick was fired already (by another worker or process, or it is not later than the last fired
    /// tick): nothing was added.
    case alreadyFired
    /// The previous tick's job (`previous`) was unfinished and the overlap policy skipped the tick.
    case skipped(previous: JobID)
    /// The previous tick's job (`previous`) was unfinished, and the tick waits for it to finish
    /// (``JobSchedule/Overlap/queueOne``).
    case deferred(previous: JobID)
}

/// One tick a store fired, and what it did.
public struct ScheduleTick: Sendable, Hashable {
    /// The tick's instant.
    public let fireTime: Date
    /// What the store did.
    public let outcome: ScheduleTickOutcome

    /// Describes a fired tick.
    public init(fireTime: Date, outcome: ScheduleTickOutcome) {
        self.fireTime = fireTime
        self.outcome = outcome
    }
}

/// A schedule's state in a store, shared by every worker and process and kept across restarts.
public struct ScheduleState: Sendable, Hashable {
    /// The schedule's name.
    public let name: String
    /// The schedule's expression or interval and zone, as the last worker that fired it described it.
    public let description: String
    /// The last tick fired (enqueued, skipped or deferred), or `nil` before the first.
    public let lastFiredAt: Date?
    /// The next tick, as the last worker that fired the schedule computed it.
    public let nextFireAt: Date?
    /// Whether the schedule is paused: its ticks enqueue nothing until it is resumed.
    public let isPaused: Bool
    /// The job of the last tick that enqueued one.
    public let lastJobID: JobID?
    /// A tick waiting for the previous tick's job to finish (``JobSchedule/Overlap/queueOne``).
    public let deferredTick: Date?
    /// When the store first saw the schedule: missed ticks are counted from here until the first tick.
    public let createdAt: Date

    /// Creates a schedule's state; stores make these from their rows.
    public init(
        name: String, description: String, lastFiredAt: Date?, nextFireAt: Date?, isPaused: Bool,
        lastJobID: JobID?, deferredTick: Date?, createdAt: Date
    ) {
        self.name = name
        self.description = description
        self.lastFiredAt = lastFiredAt
        self.nextFireAt = nextFireAt
        self.isPaused = isPaused
        self.lastJobID = lastJobID
        self.deferredTick = deferredTick
        self.createdAt = createdAt
    }
}

/// What firing a schedule did, in one transaction.
public struct ScheduleFiringResult: Sendable, Hashable {
    /// The ticks fired, oldest first; empty while the schedule is paused.
    public let ticks: [ScheduleTick]
    /// A tick that had waited for the previous job (``JobSchedule/Overlap/queueOne``) and was enqueued
    /// now that it has finished.
    public let promoted: ScheduleTick?
    /// The schedule's state after the firing.
    public let state: ScheduleState

    /// Describes a firing's result.
    public init(ticks: [ScheduleTick], promoted: ScheduleTick?, state: ScheduleState) {
        self.ticks = ticks
        self.promoted = promoted
        self.state = state
    }
}

/// Why a store could not act on a schedule.
public enum ScheduleStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The store keeps no schedules: its type does not implement them.
    case unsupported(store: String)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .unsupported(let store): "this store (\(store)) does not support schedules"
        }
    }
}

extension JobStore {
    /// Fails with ``ScheduleStoreError/unsupported(store:)``: a store that keeps schedules implements it.
    public func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> {
        Future(error: ScheduleStoreError.unsupported(store: "\(type(of: self))"))
    }

    /// Fails with ``ScheduleStoreError/unsupported(store:)``: a store that keeps schedules implements it.
    public func schedules() -> Future<[ScheduleState]> {
        Future(error: ScheduleStoreError.unsupported(store: "\(type(of: self))"))
    }

    /// Fails with ``ScheduleStoreError/unsupported(store:)``: a store that keeps schedules implements it.
    public func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?> {
        Future(error: ScheduleStoreError.unsupported(store: "\(type(of: self))"))
    }
}
