import Foundation
import Testing

@testable import FlowJobs

private func utc(_ text: String) -> Date {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime]
    return formatter.date(from: text)!
}

@Suite("Schedules: daylight saving, dialect and bad input")
struct ScheduleParsingTests {
    struct Row: Sendable, CustomTestStringConvertible {
        var zone: String
        var cron: String
        var after: String
        /// The next two fire times, in UTC.
        var expected: [String]
        var testDescription: String { "\(cron) in \(zone) after \(after)" }
    }

    /// The daylight-saving table of the "Schedules" article, row by row.
    static let daylightSavingRows: [Row] = [
        // Spring forward: 02:30 does not exist; it fires once at 03:00 local, the instant of the change.
        Row(zone: "Europe/Stockholm", cron: "30 2 * * *", after: "2026-03-28T12:00:00Z",
            expected: ["2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"]),
        // Autumn back: 02:30 happens twice; it fires once, at the first (CEST).
        Row(zone: "Europe/Stockholm", cron: "30 2 * * *", after: "2026-10-24T12:00:00Z",
            expected: ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
        Row(zone: "America/New_York", cron: "30 2 * * *", after: "2026-03-07T12:00:00Z",
            expected: ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]),
        Row(zone: "America/New_York", cron: "30 1 * * *", after: "2026-10-31T12:00:00Z",
            expected: ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
        // Lord Howe shifts by 30 minutes: 02:00-02:30 is skipped in October, 01:30-02:00 repeated in April.
        Row(zone: "Australia/Lord_Howe", cron: "15 2 * * *", after: "2026-10-03T00:00:00Z",
            expected: ["2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"]),
        Row(zone: "Australia/Lord_Howe", cron: "45 1 * * *", after: "2026-04-04T00:00:00Z",
            expected: ["2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"]),
        // Every 15 minutes: the skipped hour fires once, at 03:00; the repeated hour fires on its first pass
        // only, so the second pass (01:00-02:00 UTC) fires nothing until 03:00 CET.
        Row(zone: "Europe/Stockholm", cron: "*/15 * * * *", after: "2026-03-29T00:50:00Z",
            expected: ["2026-03-29T01:00:00Z", "2026-03-29T01:15:00Z"]),
        Row(zone: "Europe/Stockholm", cron: "*/15 * * * *", after: "2026-10-25T00:50:00Z",
            expected: ["2026-10-25T02:00:00Z", "2026-10-25T02:15:00Z"]),
    ]

    @Test("daylight saving: a skipped time fires at the change, a repeated one at its first pass",
        arguments: daylightSavingRows)
    func daylightSaving(row: Row) throws {
        let schedule = try JobSchedule(cron: row.cron, timeZone: row.zone)
        let first = try #require(schedule.nextFireTime(after: utc(row.after)))
        let second = try #require(schedule.nextFireTime(after: first))
        #expect([first, second] == row.expected.map(utc))
    }

    static let dialectRows: [Row] = [
        Row(zone: "UTC", cron: "0 9 LW * *", after: "2026-05-01T00:00:00Z",
            expected: ["2026-05-29T09:00:00Z", "2026-06-30T09:00:00Z"]),
        Row(zone: "UTC", cron: "0 9 15W * *", after: "2026-08-01T00:00:00Z",
            expected: ["2026-08-14T09:00:00Z", "2026-09-15T09:00:00Z"]),
        Row(zone: "UTC", cron: "0 9 1W * *", after: "2026-07-02T00:00:00Z",
            expected: ["2026-08-03T09:00:00Z", "2026-09-01T09:00:00Z"]),
        Row(zone: "UTC", cron: "0 9 * * 5L", after: "2026-01-01T00:00:00Z",
            expected: ["2026-01-30T09:00:00Z", "2026-02-27T09:00:00Z"]),
        Row(zone: "UTC", cron: "0 9 * * MON#2", after: "2026-01-01T00:00:00Z",
            expected: ["2026-01-12T09:00:00Z", "2026-02-09T09:00:00Z"]),
        Row(zone: "UTC", cron: "*/20 * * * * *", after: "2026-01-01T00:00:05Z",
            expected: ["2026-01-01T00:00:20Z", "2026-01-01T00:00:40Z"]),
        Row(zone: "UTC", cron: "0 12 * jan,JUL Sun", after: "2026-02-01T00:00:00Z",
            expected: ["2026-07-05T12:00:00Z", "2026-07-12T12:00:00Z"]),
        Row(zone: "UTC", cron: "0 0 29 2 *", after: "2026-03-01T00:00:00Z",
            expected: ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"]),
        // Both day fields restricted: either matches (Vixie cron). 2026-01-02 is a Friday.
        Row(zone: "UTC", cron: "0 0 13 * FRI", after: "2026-01-01T00:00:00Z",
            expected: ["2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z"]),
        Row(zone: "UTC", cron: "0 0 * * 7", after: "2026-01-01T00:00:00Z",
            expected: ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]),
        Row(zone: "UTC", cron: "5-10/5 1 * * *", after: "2026-01-01T00:00:00Z",
            expected: ["2026-01-01T01:05:00Z", "2026-01-01T01:10:00Z"]),
        Row(zone: "UTC", cron: "@yearly", after: "2026-01-01T00:00:00Z",
            expected: ["2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z"]),
        Row(zone: "UTC", cron: "@weekly", after: "2026-01-01T00:00:00Z",
            expected: ["2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"]),
        Row(zone: "UTC", cron: "@monthly", after: "2026-01-01T00:00:00Z",
            expected: ["2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"]),
        Row(zone: "Europe/Stockholm", cron: "@daily", after: "2026-01-01T00:00:00Z",
            expected: ["2026-01-01T23:00:00Z", "2026-01-02T23:00:00Z"]),
    ]

    @Test("cron dialect: W, LW, L, #, seconds, names, steps, macros", arguments: dialectRows)
    func dialect(row: Row) throws {
        let schedule = try JobSchedule(cron: row.cron, timeZone: row.zone)
        let first = try #require(schedule.nextFireTime(after: utc(row.after)))
        let second = try #require(schedule.nextFireTime(after: first))
        #expect([first, second] == row.expected.map(utc))
    }

    @Test("an interval fires at whole multiples from its anchor, after a fractional instant too")
    func interval() throws {
        let schedule = try JobSchedule.every(.seconds(90))
        #expect(schedule.nextFireTime(after: Date(timeIntervalSince1970: 100)) == Date(timeIntervalSince1970: 180))
        #expect(schedule.nextFireTime(after: Date(timeIntervalSince1970: 180)) == Date(timeIntervalSince1970: 270))
        #expect(schedule.nextFireTime(after: Date(timeIntervalSince1970: 179.5)) == Date(timeIntervalSince1970: 180))
        let anchored = try JobSchedule.every(.seconds(60), anchoredAt: Date(timeIntervalSince1970: 15))
        #expect(anchored.nextFireTime(after: Date(timeIntervalSince1970: 100)) == Date(timeIntervalSince1970: 135))
    }

    @Test("a fractional instant before a cron tick still reaches that tick")
    func fractionalAfter() throws {
        let schedule = try JobSchedule(cron: "* * * * *")
        #expect(schedule.nextFireTime(after: Date(timeIntervalSince1970: 59.5)) == Date(timeIntervalSince1970: 60))
    }

    struct BadInput: Sendable, CustomTestStringConvertible {
        var cron: String
        var zone = "UTC"
        var error: ScheduleError
        var testDescription: String { "\(cron) in \(zone)" }
    }

    static let badInputs: [BadInput] = [
        BadInput(cron: "*/0 * * * *", error: .invalidField(
            field: "minute", text: "*/0", reason: "a step must be at least 1")),
        BadInput(cron: "1,,2 * * * *", error: .invalidField(
            field: "minute", text: "1,,2", reason: "a list must not have an empty item")),
        BadInput(cron: "0 0 1, * *", error: .invalidField(
            field: "day of month", text: "1,", reason: "a list must not have an empty item")),
        BadInput(cron: "60 * * * *", error: .invalidField(
            field: "minute", text: "60", reason: "60 is out of range 0-59")),
        BadInput(cron: "0 24 * * *", error: .invalidField(
            field: "hour", text: "24", reason: "24 is out of range 0-23")),
        BadInput(cron: "0 0 32 * *", error: .invalidField(
            field: "day of month", text: "32", reason: "32 is out of range 1-31")),
        BadInput(cron: "0 0 0 * *", error: .invalidField(
            field: "day of month", text: "0", reason: "0 is out of range 1-31")),
        BadInput(cron: "0 0 * 13 *", error: .invalidField(
            field: "month", text: "13", reason: "13 is out of range 1-12")),
        BadInput(cron: "0 0 * * 8", error: .invalidField(
            field: "day of week", text: "8", reason: "8 is out of range 0-7")),
        BadInput(cron: "0 0 * * MON#6", error: .invalidField(
            field: "day of week", text: "MON#6", reason: "6 is out of range 1-5")),
        BadInput(cron: "60 0 0 * * *", error: .invalidField(
            field: "second", text: "60", reason: "60 is out of range 0-59")),
        BadInput(cron: "5-1 * * * *", error: .invalidField(
            field: "minute", text: "5-1", reason: "the range \"5-1\" runs backwards")),
        BadInput(cron: "0 0 * FOO *", error: .invalidField(
            field: "month", text: "FOO",
            reason: "\"FOO\" is not a number (names: JAN, FEB, MAR, APR, MAY, JUN, JUL, AUG, SEP, OCT, NOV, DEC)")),
        BadInput(cron: "0 0 30 2 *", error: .neverFires(expression: "0 0 30 2 *")),
        BadInput(cron: "0 0 31 4,6,9,11 *", error: .neverFires(expression: "0 0 31 4,6,9,11 *")),
        BadInput(cron: "* * * *", error: .malformedExpression(
            expression: "* * * *",
            reason: "4 fields, where cron takes five (minute hour day-of-month month day-of-week) "
                + "or six (seconds first)")),
        BadInput(cron: "@reboot", error: .malformedExpression(
            expression: "@reboot",
            reason: "unknown macro (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)")),
        BadInput(
            cron: "0 3 * * *", zone: "Mars/Olympus_Mons", error: .unknownTimeZone(identifier: "Mars/Olympus_Mons")),
    ]

    @Test("bad input fails when the schedule is made, naming the field", arguments: badInputs)
    func badInput(input: BadInput) {
        #expect(throws: input.error) { try JobSchedule(cron: input.cron, timeZone: input.zone) }
    }

    @Test("an error's description names the field and says what is wrong")
    func errorDescription() {
        let error = ScheduleError.invalidField(field: "minute", text: "*/0", reason: "a step must be at least 1")
        #expect(error.description == "the minute field \"*/0\": a step must be at least 1")
        #expect("\(ScheduleError.neverFires(expression: "0 0 30 2 *"))".contains("never fire"))
    }

    @Test("an interval must be a whole number of seconds, at least one")
    func badInterval() {
        #expect(throws: ScheduleError.self) { try JobSchedule.every(.milliseconds(500)) }
        #expect(throws: ScheduleError.self) { try JobSchedule.every(.seconds(0)) }
        #expect(throws: ScheduleError.self) { try JobSchedule.every(.seconds(-5)) }
    }
}

@Suite("Schedules: catch-up after downtime")
struct ScheduleCatchUpTests {
    @Test("none, the latest, or the newest few of the missed ticks fire, oldest first")
    func cronPolicies() throws {
        let hourly = try JobSchedule(cron: "@hourly")
        let lastFired = utc("2026-01-01T00:00:00Z")
        let now = utc("2026-01-01T05:30:00Z")
        #expect(hourly.missedTicks(after: lastFired, through: now, catchUp: .none).isEmpty)
        #expect(hourly.missedTicks(after: lastFired, through: now, catchUp: .latest) == [utc("2026-01-01T05:00:00Z")])
        #expect(
            hourly.missedTicks(after: lastFired, through: now, catchUp: .all(limit: 3))
                == ["2026-01-01T03:00:00Z", "2026-01-01T04:00:00Z", "2026-01-01T05:00:00Z"].map(utc))
        #expect(hourly.missedTicks(after: lastFired, through: now, catchUp: .all(limit: 100)).count == 5)
        #expect(hourly.missedTicks(after: now, through: now, catchUp: .all(limit: 100)).isEmpty)
        #expect(hourly.missedTicks(after: lastFired, through: now, catchUp: .all(limit: 0)).isEmpty)
    }

    @Test("after a long downtime a cron schedule keeps its newest ticks, across a daylight-saving change too")
    func cronLongDowntime() throws {
        let everyMinute = try JobSchedule(cron: "* * * * *")
        #expect(
            everyMinute.missedTicks(
                after: utc("2024-01-01T00:00:00Z"), through: utc("2026-01-01T00:00:30Z"), catchUp: .all(limit: 3))
                == ["2025-12-31T23:58:00Z", "2025-12-31T23:59:00Z", "2026-01-01T00:00:00Z"].map(utc))
        let yearly = try JobSchedule(cron: "@yearly")
        #expect(
            yearly.missedTicks(
                after: utc("2000-01-01T00:00:00Z"), through: utc("2026-06-01T00:00:00Z"), catchUp: .all(limit: 3))
                == ["2024-01-01T00:00:00Z", "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z"].map(utc))
        #expect(
            yearly.missedTicks(
                after: utc("2025-06-01T00:00:00Z"), through: utc("2026-06-01T00:00:00Z"), catchUp: .all(limit: 3))
                == [utc("2026-01-01T00:00:00Z")])
        // In the second pass of Stockholm's repeated hour (02:40 CET), nothing has fired since 02:45 CEST.
        let quarterly = try JobSchedule(cron: "*/15 * * * *", timeZone: "Europe/Stockholm")
        #expect(
            quarterly.missedTicks(
                after: utc("2026-10-24T00:00:00Z"), through: utc("2026-10-25T01:40:00Z"), catchUp: .all(limit: 3))
                == ["2026-10-25T00:15:00Z", "2026-10-25T00:30:00Z", "2026-10-25T00:45:00Z"].map(utc))
    }

    @Test("an interval's missed ticks are the newest multiples of it, however long the downtime")
    func intervalPolicies() throws {
        let everySecond = try JobSchedule.every(.seconds(1))
        let lastFired = Date(timeIntervalSince1970: 1_000)
        let now = Date(timeIntervalSince1970: 1_000_000.5)
        #expect(
            everySecond.missedTicks(after: lastFired, through: now, catchUp: .all(limit: 2))
                == [Date(timeIntervalSince1970: 999_999), Date(timeIntervalSince1970: 1_000_000)])
        #expect(
            everySecond.missedTicks(after: Date(timeIntervalSince1970: 999_998), through: now, catchUp: .all(limit: 9))
                == [Date(timeIntervalSince1970: 999_999), Date(timeIntervalSince1970: 1_000_000)])
        #expect(everySecond.missedTicks(after: lastFired, through: now, catchUp: .latest).count == 1)
    }
}
