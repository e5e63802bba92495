import Foundation

/// When a schedule fires: a cron expression in an IANA time zone, or a plain interval.
///
/// A schedule is checked when it is made: an invalid expression, a schedule that never fires (February 30) or
/// a zone missing from the system's zone database (`/usr/share/zoneinfo`) throws a ``ScheduleError`` naming
/// the field at fault.
///
/// ```swift
/// let nightly = try JobSchedule(cron: "0 3 * * *", timeZone: "Europe/Stockholm")
/// let weekdays = try JobSchedule(cron: "*/15 * * * MON-FRI")
/// let often = try JobSchedule.every(.seconds(90))
/// let next = nightly.nextFireTime(after: Date())
/// ```
///
/// Daylight saving: a local time that a spring-forward skips fires once, at the first valid instant after it
/// (the instant of the change); a local time that an autumn-back repeats fires once, at its first occurrence.
/// Every scheduler computes the same instants, so an instant identifies a tick.
public struct JobSchedule: Sendable, Hashable, CustomStringConvertible {
    enum Rule: Hashable, Sendable {
        case cron(CronExpression, text: String)
        /// Every `seconds` seconds from `anchor` (seconds since 1970).
        case interval(seconds: Int, anchor: Int)
    }

    let rule: Rule

    /// The zone whose wall clock a cron expression reads; UTC unless given.
    public let timeZone: TimeZone

    /// A schedule from a cron expression, read in the zone named `identifier`.
    ///
    /// - Parameters:
    ///   - cron: five fields (minute, hour, day of month, month, day of week), six with seconds first, or one
    ///     of `@yearly`, `@monthly`, `@weekly`, `@daily`, `@hourly`.
    ///   - identifier: an IANA zone such as `"Europe/Stockholm"`; `"UTC"` by default.
    /// - Throws: ``ScheduleError`` naming the field or the zone at fault.
    public init(cron: String, timeZone identifier: String = "UTC") throws(ScheduleError) {
        guard let zone = TimeZone(identifier: identifier) else { throw .unknownTimeZone(identifier: identifier) }
        try self.init(cron: cron, timeZone: zone)
    }

    /// A schedule from a cron expression, read in `timeZone`.
    ///
    /// - Throws: ``ScheduleError`` naming the field at fault, or ``ScheduleError/neverFires(expression:)``.
    public init(cron: String, timeZone: TimeZone) throws(ScheduleError) {
        let expression = try CronExpression(parsing: cron)
        // 2000-01-01 00:00: any later 400-year window holds the same matches, so none here means none ever.
        guard expression.nextMatch(after: 946_684_800) != nil else { throw .neverFires(expression: cron) }
        rule = .cron(expression, text: cron)
        self.timeZone = timeZone
    }

    /// A schedule that fires every `interval`, at whole multiples of it from `anchor` (1970-01-01 UTC by
    /// default), so that every scheduler agrees on the instants whenever it started.
    ///
    /// - Throws: ``ScheduleError/invalidInterval(reason:)`` unless `interval` is a whole number of seconds, at
    ///   least one.
    public static func every(
        _ interval: Duration, anchoredAt anchor: Date = Date(timeIntervalSince1970: 0)
    ) throws(ScheduleError) -> JobSchedule {
        let (seconds, attoseconds) = interval.components
        guard attoseconds == 0, seconds >= 1 else {
            throw .invalidInterval(reason: "\(interval) is not a whole number of seconds, at least one")
        }
        return JobSchedule(
            rule: .interval(seconds: Int(seconds), anchor: Int(anchor.timeIntervalSince1970.rounded(.down))),
            timeZone: TimeZone(identifier: "UTC")!)
    }

    private init(rule: Rule, timeZone: TimeZone) {
        self.rule = rule
        self.timeZone = timeZone
    }

    /// The first instant strictly after `date` at which the schedule fires, or nil past the calendar's end.
    public func nextFireTime(after date: Date) -> Date? {
        let after = date.timeIntervalSince1970
        guard after.isFinite, abs(after) < 1e15 else { return nil }
        let whole = Int(after.rounded(.down))
        switch rule {
        case .interval(let seconds, let anchor):
            let next = anchor + ((whole - anchor).flooredDivision(by: seconds) + 1) * seconds
            return Date(timeIntervalSince1970: TimeInterval(next))
        case .cron(let expression, _):
            var wallClock = whole + offset(at: whole)
            // Wall-clock times after `date`'s may still map to instants at or before it (the repeated hour of
            // an autumn-back, seen from its second pass), so keep going until one lands after it.
            while let match = expression.nextMatch(after: wallClock) {
                let instant = firstInstant(reaching: match)
                if TimeInterval(instant) > after { return Date(timeIntervalSince1970: TimeInterval(instant)) }
                wallClock = match
            }
            return nil
        }
    }

    /// The instants at which the schedule fires after `start`, up to and including `end`, in order.
    public func fireTimes(after start: Date, through end: Date) -> [Date] {
        var times: [Date] = []
        var cursor = start
        while let next = nextFireTime(after: cursor), next <= end {
            times.append(next)
            cursor = next
        }
        return times
    }

    /// The expression or interval, and the zone.
    public var description: String {
        switch rule {
        case .cron(_, let text): return "cron \"\(text)\" in \(timeZone.identifier)"
        case .interval(let seconds, _): return "every \(seconds) s"
        }
    }

    private func offset(at instant: Int) -> Int {
        timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(instant)))
    }

    /// The earliest instant whose wall clock reads `wallClock` or later: the first occurrence of a repeated
    /// time, and the instant of the change for a time that a spring-forward skips.
    private func firstInstant(reaching wallClock: Int) -> Int {
        // The offsets in force around `wallClock`: no zone changes its offset twice within two days.
        var offsets = Set([offset(at: wallClock - 172_800), offset(at: wallClock), offset(at: wallClock + 172_800)])
        for candidate in offsets { offsets.insert(offset(at: wallClock - candidate)) }
        let valid = offsets.map { wallClock - $0 }.filter { wallClock - offset(at: $0) == $0 }
        if let earliest = valid.min() { return earliest }
        // A gap: before the change the wall clock reads earlier than `wallClock`, after it later. Search the
        // change between the instants the two offsets would give.
        var low = wallClock - offsets.max()!  // reads earlier: the offset before the change is smaller
        var high = wallClock - offsets.min()!  // reads later
        while high - low > 1 {
            let middle = low + (high - low) / 2
            if middle + offset(at: middle) >= wallClock { high = middle } else { low = middle }
        }
        return high
    }
}
