/// The due times of a repeating timer: a pure state machine, with no clock and no threads, so the
/// missed-tick arithmetic can be tested on its own.
///
/// Ticks are slots on a grid: slot *k* is due at `anchorDueTime + (k − anchorSlot) × interval`. Due times
/// are always computed from the anchor, never by adding the interval to the last firing, so lateness
/// never accumulates. Only ``MissedTickPolicy/delay`` moves the anchor.
struct PeriodicSchedule: Sendable {
    let intervalNanoseconds: UInt64
    let missedTicks: MissedTickPolicy
    private var anchorDueTime: UInt64
    private var anchorSlot: UInt64 = 0
    /// The slot of the tick that is scheduled next (or firing now).
    private(set) var slot: UInt64 = 0
    /// How many ticks the last call to ``advance(now:)`` dropped.
    private(set) var skippedCount = 0

    init(firstDueTime: UInt64, intervalNanoseconds: UInt64, missedTicks: MissedTickPolicy) {
        precondition(intervalNanoseconds > 0)
        anchorDueTime = firstDueTime
        self.intervalNanoseconds = intervalNanoseconds
        self.missedTicks = missedTicks
    }

    /// When the scheduled tick is due.
    var dueTime: UInt64 { dueTime(ofSlot: slot) }

    private func dueTime(ofSlot slot: UInt64) -> UInt64 {
        let (offset, overflow) = (slot - anchorSlot).multipliedReportingOverflow(by: intervalNanoseconds)
        return overflow ? .max : anchorDueTime.addingSaturating(offset)
    }

    /// Moves to the tick after the one that just ran, given the clock reads `now`, and returns when it
    /// is due.
    mutating func advance(now: UInt64) -> UInt64 {
        let candidate = slot + 1
        let candidateDueTime = dueTime(ofSlot: candidate)
        skippedCount = 0
        guard candidateDueTime < now else {
            slot = candidate
            return candidateDueTime
        }
        switch missedTicks {
        case .burst:
            slot = candidate
        case .skip:
            // The first slot due at or after now: ceil((now - anchor) / interval) slots past the anchor.
            let elapsed = now - anchorDueTime
            let slotsPastAnchor = (elapsed + intervalNanoseconds - 1) / intervalNanoseconds
            let firstCurrent = anchorSlot + slotsPastAnchor
            skippedCount = Int(firstCurrent - candidate)
            slot = firstCurrent
        case .delay:
            anchorSlot = candidate
            anchorDueTime = now.addingSaturating(intervalNanoseconds)
            slot = candidate
        }
        return dueTime(ofSlot: slot)
    }
}
