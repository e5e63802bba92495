import Foundation

extension JobSchedule {
    /// Which of the ticks missed while no scheduler ran (a deploy, a crash) still fire when one starts.
    ///
    /// ```swift
    /// let nightly = try JobSchedule(cron: "0 3 * * *", timeZone: "Europe/Stockholm")
    /// let lastFired = Date(timeIntervalSince1970: 1_767_150_000)
    /// let due = nightly.missedTicks(after: lastFired, through: Date(), catchUp: .latest)
    /// ```
    public enum CatchUp: Hashable, Sendable {
        /// None: the schedule resumes at its next tick.
        case none
        /// Only the most recent missed tick.
        case latest
        /// The most recent missed ticks, at most `limit` of them, oldest first.
        case all(limit: Int)
    }

    /// The ticks after `lastFired` and no later than `now` that `policy` says still fire, oldest first.
    ///
    /// - Parameters:
    ///   - lastFired: the last tick known to have been enqueued.
    ///   - now: the current time; a tick at exactly `now` counts as missed.
    ///   - policy: how many missed ticks to keep.
    /// - Returns: at most one tick for ``CatchUp/latest``, at most `limit` for ``CatchUp/all(limit:)``, none
    ///   for ``CatchUp/none``.
    public func missedTicks(after lastFired: Date, through now: Date, catchUp policy: CatchUp) -> [Date] {
        let limit: Int
        switch policy {
        case .none: return []
        case .latest: limit = 1
        case .all(let count): limit = max(0, count)
        }
        guard limit > 0 else { return [] }
        if case .interval(let seconds, let anchor) = rule {
            // Whole multiples from the anchor: the latest ones are arithmetic, however long the downtime.
            let nowWhole = Int(now.timeIntervalSince1970.rounded(.down))
            let newest = anchor + (nowWhole - anchor).flooredDivision(by: seconds) * seconds
            var ticks: [Date] = []
            var tick = newest
            while ticks.count < limit, TimeInterval(tick) > lastFired.timeIntervalSince1970 {
                ticks.append(Date(timeIntervalSince1970: TimeInterval(tick)))
                tick -= seconds
            }
            return ticks.reversed()
        }
        // A cron schedule walks forward, keeping only the newest `limit` ticks. The walk starts in a window
        // before `now` that doubles until it holds `limit` ticks or reaches back to `lastFired`: after a long
        // downtime it does not walk every tick since (a month of a per-second schedule inside the store's
        // transaction).
        var window: TimeInterval = 3600
        while true {
            let start = max(lastFired, now.addingTimeInterval(-window))
            var kept: [Date] = []
            var cursor = start
            while let tick = nextFireTime(after: cursor), tick <= now {
                if kept.count == limit { kept.removeFirst() }
                kept.append(tick)
                cursor = tick
            }
            if kept.count == limit || start == lastFired { return kept }
            window *= 2
        }
    }
}
