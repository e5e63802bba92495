import Foundation
import Testing

@testable import FlowJobs

/// Fire times of cron schedules over a whole year in zones with daylight saving, against a brute force that
/// walks every minute of the year with the zone's transitions as Foundation lists them.
@Suite("Schedules: next fire time")
struct ScheduleTests {
    /// A minute of wall-clock time, as the brute force sees it.
    struct Local {
        var month: Int
        var day: Int
        /// 1 for Sunday to 7 for Saturday, as `Calendar` counts.
        var weekday: Int
        var daysInMonth: Int
        var hour: Int
        var minute: Int
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var cron: String
        var matches: @Sendable (Local) -> Bool
        var testDescription: String { cron }
    }

    static let cases: [Case] = [
        Case(cron: "0 3 * * *") { $0.hour == 3 && $0.minute == 0 },
        Case(cron: "30 2 * * *") { $0.hour == 2 && $0.minute == 30 },
        Case(cron: "*/15 * * * 1-5") { $0.minute % 15 == 0 && (2...6).contains($0.weekday) },
        Case(cron: "0 0 L * *") { $0.day == $0.daysInMonth && $0.hour == 0 && $0.minute == 0 },
        Case(cron: "@hourly") { $0.minute == 0 },
        Case(cron: "45 1 * * SUN") { $0.weekday == 1 && $0.hour == 1 && $0.minute == 45 },
    ]

    static let zones = ["Europe/Stockholm", "America/New_York", "Australia/Lord_Howe", "UTC"]

    @Test("a year of fire times matches the minute-by-minute brute force", arguments: zones, cases)
    func yearMatchesBruteForce(zoneIdentifier: String, testCase: Case) throws {
        let zone = try #require(TimeZone(identifier: zoneIdentifier))
        let start = Date(timeIntervalSince1970: 1_767_139_200)  // 2025-12-31 00:00 UTC
        let end = Date(timeIntervalSince1970: 1_798_848_000)  // 2027-01-02 00:00 UTC
        let transitions = Self.transitions(of: zone, from: start, to: end)
        if zoneIdentifier != "UTC" { #expect(transitions.count == 2, "both changes of \(zoneIdentifier) in range") }

        let expected = Self.bruteForce(zone: zone, transitions: transitions, from: start, to: end, testCase.matches)
        #expect(expected.count >= 12, "the brute force found the year's ticks")
        let schedule = try JobSchedule(cron: testCase.cron, timeZone: zoneIdentifier)
        let actual = schedule.fireTimes(after: start, through: end)
        #expect(actual.count == expected.count)
        #expect(actual == expected)
        if actual != expected, let first = zip(actual, expected).first(where: { $0 != $1 }) {
            Issue.record("first difference: computed \(first.0), expected \(first.1)")
        }
    }

    /// The instants at which `zone` changes its offset in the range, from Foundation's own list.
    static func transitions(of zone: TimeZone, from start: Date, to end: Date) -> [Date] {
        var result: [Date] = []
        var cursor = start
        while let next = zone.nextDaylightSavingTimeTransition(after: cursor), next <= end {
            result.append(next)
            cursor = next
        }
        return result
    }

    /// Walks every minute: a minute fires when the wall clock passes, for the first time, a wall-clock minute
    /// the schedule matches (passing several at once in a spring-forward gap fires once, and a repeated hour
    /// passes no minute for the first time).
    static func bruteForce(
        zone: TimeZone, transitions: [Date], from start: Date, to end: Date, _ matches: (Local) -> Bool
    ) -> [Date] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let boundaries = transitions.map { Int($0.timeIntervalSince1970) }
        let offsets = ([start] + transitions).map { zone.secondsFromGMT(for: $0) }
        var segment = 0
        var days: [Int: (month: Int, day: Int, weekday: Int, length: Int)] = [:]
        func local(_ wallClock: Int) -> Local {
            let dayNumber = wallClock / 86_400
            let fields =
                days[dayNumber]
                ?? {
                    let date = Date(timeIntervalSince1970: TimeInterval(dayNumber * 86_400))
                    let parts = calendar.dateComponents([.month, .day, .weekday], from: date)
                    let length = calendar.range(of: .day, in: .month, for: date)!.count
                    let fields = (parts.month!, parts.day!, parts.weekday!, length)
                    days[dayNumber] = fields
                    return fields
                }()
            let secondOfDay = wallClock % 86_400
            return Local(
                month: fields.month, day: fields.day, weekday: fields.weekday, daysInMonth: fields.length,
                hour: secondOfDay / 3600, minute: secondOfDay % 3600 / 60)
        }

        let first = Int(start.timeIntervalSince1970)
        var highWater = first + offsets[0]
        var fires: [Date] = []
        var instant = first + 60
        while instant <= Int(end.timeIntervalSince1970) {
            while segment < boundaries.count, boundaries[segment] <= instant { segment += 1 }
            let wallClock = instant + offsets[segment]
            if wallClock > highWater {
                var passed = highWater + 60
                while passed <= wallClock {
                    if matches(local(passed)) {
                        fires.append(Date(timeIntervalSince1970: TimeInterval(instant)))
                        break
                    }
                    passed += 60
                }
                highWater = wallClock
            }
            instant += 60
        }
        return fires
    }
}
