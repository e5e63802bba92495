/// What a repeating timer does about ticks whose due time passed while the scheduler was busy (or
/// while the previous tick's work was still running).
///
/// With an interval of 1 s, ticks are due at 1, 2, 3, 4… s. Say the scheduler is blocked until 3.5 s:
/// tick 1 runs late at 3.5 s, and ticks 2 and 3 are missed. Then:
///
/// | policy | next ticks |
/// |---|---|
/// | ``burst`` | 2 and 3 at once (3.5 s), then 4 s, 5 s… |
/// | ``skip`` | 4 s, 5 s… (ticks 2 and 3 are dropped; the next tick reports them as skipped) |
/// | ``delay`` | 4.5 s, 5.5 s… (the schedule restarts one interval after now) |
///
/// ```swift
/// scheduler.repeatingTimer(every: 1, missedTicks: .burst) { tick in account(tick) }
/// ```
public enum MissedTickPolicy: Sendable, Hashable {
    /// Fire every missed tick, one after another as soon as possible, then continue on the original
    /// schedule: the number of ticks always matches the time passed.
    case burst
    /// Drop the missed ticks and continue with the next tick on the original schedule that is not in
    /// the past.
    case skip
    /// Restart the schedule from now: the next tick is one interval after the moment the miss was
    /// noticed, and the ticks after it keep that spacing.
    case delay
}

/// One firing of a repeating timer, passed to its work.
///
/// ```swift
/// scheduler.repeatingTimer(every: 0.5) { tick in
///     if tick.skippedCount > 0 { print("fell behind by \(tick.skippedCount) ticks") }
/// }
/// ```
public struct TimerTick: Sendable, Hashable {
    /// How many times the timer has fired, this tick included: 1 for the first tick.
    public let number: Int
    /// When this tick was due, on the scheduler's clock (`Scheduler.uptimeNanoseconds` in Flow).
    public let dueUptimeNanoseconds: UInt64
    /// How many ticks just before this one were dropped by ``MissedTickPolicy/skip``.
    public let skippedCount: Int

    /// Creates a tick; timers create them, tests may too.
    public init(number: Int, dueUptimeNanoseconds: UInt64, skippedCount: Int = 0) {
        self.number = number
        self.dueUptimeNanoseconds = dueUptimeNanoseconds
        self.skippedCount = skippedCount
    }
}
