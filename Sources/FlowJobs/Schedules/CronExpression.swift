/// A parsed cron expression: which wall-clock seconds, minutes, hours, days and months it matches.
///
/// The dialect is Vixie cron's with the extensions that cron dialects share: an optional seconds field first,
/// names of months and days, `L`, `LW` and `nW` in the day of month, `nL` and `n#k` in the day of week, and the
/// `@hourly` family. When both the day of month and the day of week are restricted (neither starts with `*`
/// or `?`), a day matches if either matches, as in Vixie cron.
struct CronExpression: Hashable, Sendable {
    /// The seconds of a day the expression matches, ascending.
    let timesOfDay: [Int]
    /// Bit `m` set when month `m` (1 to 12) matches.
    let months: UInt16
    let daysOfMonth: DayOfMonthRule
    let daysOfWeek: DayOfWeekRule
    let isDayOfMonthRestricted: Bool
    let isDayOfWeekRestricted: Bool

    struct DayOfMonthRule: Hashable, Sendable {
        /// Bit `d` set when day `d` (1 to 31) matches.
        var days: UInt32 = 0
        var lastDay = false
        var lastWeekday = false
        /// Days `n` of `nW`: the weekday nearest to day `n`, within the month.
        var nearestWeekdays: [Int] = []
    }

    struct DayOfWeekRule: Hashable, Sendable {
        /// Bit `w` set when weekday `w` (0 Sunday to 6 Saturday) matches.
        var weekdays: UInt8 = 0
        /// Weekdays of `wL`: the last such weekday of the month.
        var lastOfMonth: UInt8 = 0
        /// `w#k`: the `k`th weekday `w` of the month.
        var nth: [Nth] = []

        struct Nth: Hashable, Sendable {
            var weekday: Int
            var occurrence: Int
        }
    }

    private static let macros: [String: String] = [
        "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
        "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
    ]
    private static let monthNames = [
        "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
    ]
    private static let weekdayNames = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

    /// Parses `text`, or names the field at fault.
    init(parsing text: String) throws(ScheduleError) {
        let trimmed = text.trimmingWhitespace()
        var source = trimmed
        if trimmed.hasPrefix("@") {
            guard let expansion = Self.macros[trimmed.lowercased()] else {
                throw .malformedExpression(
                    expression: text,
                    reason: "unknown macro (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"
                )
            }
            source = expansion
        }
        var fields = source.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        switch fields.count {
        case 5: fields.insert("0", at: 0)
        case 6: break
        default:
            throw .malformedExpression(
                expression: text,
                reason: "\(fields.count) fields, where cron takes five (minute hour day-of-month month "
                    + "day-of-week) or six (seconds first)"
            )
        }
        let seconds = try Self.values(fields[0], field: "second", range: 0...59)
        let minutes = try Self.values(fields[1], field: "minute", range: 0...59)
        let hours = try Self.values(fields[2], field: "hour", range: 0...23)
        daysOfMonth = try Self.dayOfMonthRule(fields[3])
        let monthValues = try Self.values(fields[4], field: "month", range: 1...12, names: Self.monthNames)
        daysOfWeek = try Self.dayOfWeekRule(fields[5])
        isDayOfMonthRestricted = !(fields[3].hasPrefix("*") || fields[3].hasPrefix("?"))
        isDayOfWeekRestricted = !(fields[5].hasPrefix("*") || fields[5].hasPrefix("?"))
        months = monthValues.reduce(0) { $0 | (1 << UInt16($1)) }
        var times: [Int] = []
        times.reserveCapacity(hours.count * minutes.count * seconds.count)
        for hour in hours {
            for minute in minutes {
                for second in seconds { times.append(hour * 3600 + minute * 60 + second) }
            }
        }
        timesOfDay = times
    }

    /// Whether the expression matches the date, leaving the time of day aside.
    func matches(_ date: CivilDate) -> Bool {
        guard months & (1 << UInt16(date.month)) != 0 else { return false }
        let length = date.daysInMonth
        let weekday = date.weekday
        let firstWeekday = CivilDate.weekday(ofDay: date.days - (date.day - 1))
        func weekdayOf(_ day: Int) -> Int { (firstWeekday + day - 1) % 7 }

        var dayOfMonthMatches = daysOfMonth.days & (1 << UInt32(date.day)) != 0
        if !dayOfMonthMatches, daysOfMonth.lastDay, date.day == length { dayOfMonthMatches = true }
        if !dayOfMonthMatches, daysOfMonth.lastWeekday {
            let last = weekdayOf(length)
            let lastWeekday = last == 6 ? length - 1 : last == 0 ? length - 2 : length
            dayOfMonthMatches = date.day == lastWeekday
        }
        if !dayOfMonthMatches {
            for target in daysOfMonth.nearestWeekdays where target <= length {
                let nearest: Int
                switch weekdayOf(target) {
                case 6: nearest = target == 1 ? 3 : target - 1
                case 0: nearest = target == length ? target - 2 : target + 1
                default: nearest = target
                }
                if nearest == date.day {
                    dayOfMonthMatches = true
                    break
                }
            }
        }

        var dayOfWeekMatches = daysOfWeek.weekdays & (1 << UInt8(weekday)) != 0
        if !dayOfWeekMatches, daysOfWeek.lastOfMonth & (1 << UInt8(weekday)) != 0, date.day + 7 > length {
            dayOfWeekMatches = true
        }
        if !dayOfWeekMatches {
            let occurrence = (date.day - 1) / 7 + 1
            dayOfWeekMatches = daysOfWeek.nth.contains { $0.weekday == weekday && $0.occurrence == occurrence }
        }

        if isDayOfMonthRestricted && isDayOfWeekRestricted { return dayOfMonthMatches || dayOfWeekMatches }
        return dayOfMonthMatches && dayOfWeekMatches
    }

    /// The first matching wall-clock second after `wallClock` (seconds since 1970-01-01 00:00 as if local time
    /// were UTC), or nil if none in the 400 years after it: one whole cycle of the Gregorian calendar, so nil
    /// means the expression never matches.
    func nextMatch(after wallClock: Int) -> Int? {
        var day = wallClock.flooredDivision(by: 86_400)
        var earliestTime = wallClock - day * 86_400 + 1
        let lastDay = day + 146_097
        while day <= lastDay {
            let date = CivilDate(days: day)
            if months & (1 << UInt16(date.month)) == 0 {
                day = (date.month == 12
                    ? CivilDate(year: date.year + 1, month: 1, day: 1)
                    : CivilDate(year: date.year, month: date.month + 1, day: 1)).days
                earliestTime = 0
                continue
            }
            if matches(date), let time = firstTime(atOrAfter: earliestTime) { return day * 86_400 + time }
            day += 1
            earliestTime = 0
        }
        return nil
    }

    private func firstTime(atOrAfter second: Int) -> Int? {
        var low = 0
        var high = timesOfDay.count
        while low < high {
            let middle = (low + high) / 2
            if timesOfDay[middle] < second { low = middle + 1 } else { high = middle }
        }
        return low < timesOfDay.count ? timesOfDay[low] : nil
    }

    // MARK: Parsing

    private static func values(
        _ text: String, field: String, range: ClosedRange<Int>, names: [String] = []
    ) throws(ScheduleError) -> [Int] {
        var result = Set<Int>()
        for item in try listItems(text, field: field) {
            for value in try itemValues(item, whole: text, field: field, range: range, names: names) {
                result.insert(value)
            }
        }
        return result.sorted()
    }

    private static func listItems(_ text: String, field: String) throws(ScheduleError) -> [String] {
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        if items.contains(where: \.isEmpty) {
            throw .invalidField(field: field, text: text, reason: "a list must not have an empty item")
        }
        return items
    }

    private static func itemValues(
        _ item: String, whole: String, field: String, range: ClosedRange<Int>, names: [String]
    ) throws(ScheduleError) -> [Int] {
        let parts = item.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2 else {
            throw .invalidField(field: field, text: whole, reason: "\"\(item)\" has more than one step")
        }
        var step = 1
        if parts.count == 2 {
            guard let parsed = Int(parts[1]) else {
                throw .invalidField(field: field, text: whole, reason: "the step \"\(parts[1])\" is not a number")
            }
            guard parsed >= 1 else {
                throw .invalidField(field: field, text: whole, reason: "a step must be at least 1")
            }
            step = parsed
        }
        let base = parts[0]
        let bounds: ClosedRange<Int>
        if base == "*" || (base == "?" && (field == "day of month" || field == "day of week")) {
            bounds = range
        } else if let dash = base.firstIndex(of: "-") {
            let low = try value(String(base[..<dash]), whole: whole, field: field, range: range, names: names)
            let high = try value(
                String(base[base.index(after: dash)...]), whole: whole, field: field, range: range, names: names)
            guard low <= high else {
                throw .invalidField(field: field, text: whole, reason: "the range \"\(base)\" runs backwards")
            }
            bounds = low...high
        } else {
            let single = try value(base, whole: whole, field: field, range: range, names: names)
            bounds = single...(parts.count == 2 ? range.upperBound : single)
        }
        return Array(stride(from: bounds.lowerBound, through: bounds.upperBound, by: step))
    }

    private static func value(
        _ text: String, whole: String, field: String, range: ClosedRange<Int>, names: [String]
    ) throws(ScheduleError) -> Int {
        if let index = names.firstIndex(of: text.uppercased()) { return index + range.lowerBound }
        guard let number = Int(text) else {
            let known = names.isEmpty ? "" : " (names: \(names.joined(separator: ", ")))"
            throw .invalidField(field: field, text: whole, reason: "\"\(text)\" is not a number\(known)")
        }
        guard range.contains(number) else {
            throw .invalidField(
                field: field, text: whole,
                reason: "\(number) is out of range \(range.lowerBound)-\(range.upperBound)")
        }
        return number
    }

    private static func dayOfMonthRule(_ text: String) throws(ScheduleError) -> DayOfMonthRule {
        let field = "day of month"
        var rule = DayOfMonthRule()
        for item in try listItems(text, field: field) {
            let upper = item.uppercased()
            if upper == "L" {
                rule.lastDay = true
            } else if upper == "LW" {
                rule.lastWeekday = true
            } else if upper.hasSuffix("W") {
                let day = try value(String(upper.dropLast()), whole: text, field: field, range: 1...31, names: [])
                rule.nearestWeekdays.append(day)
            } else {
                for day in try itemValues(item, whole: text, field: field, range: 1...31, names: []) {
                    rule.days |= 1 << UInt32(day)
                }
            }
        }
        return rule
    }

    private static func dayOfWeekRule(_ text: String) throws(ScheduleError) -> DayOfWeekRule {
        let field = "day of week"
        var rule = DayOfWeekRule()
        for item in try listItems(text, field: field) {
            let upper = item.uppercased()
            if let hash = upper.firstIndex(of: "#") {
                let weekday = try value(
                    String(upper[..<hash]), whole: text, field: field, range: 0...7, names: weekdayNames) % 7
                let occurrence = try value(
                    String(upper[upper.index(after: hash)...]), whole: text, field: field, range: 1...5, names: [])
                rule.nth.append(.init(weekday: weekday, occurrence: occurrence))
            } else if upper.count > 1, upper.hasSuffix("L") {
                let weekday = try value(
                    String(upper.dropLast()), whole: text, field: field, range: 0...7, names: weekdayNames) % 7
                rule.lastOfMonth |= 1 << UInt8(weekday)
            } else if upper == "L" {
                throw .invalidField(
                    field: field, text: text,
                    reason: "a lone \"L\" means different days in different cron dialects: write \"6\" or \"5L\"")
            } else {
                for weekday in try itemValues(item, whole: text, field: field, range: 0...7, names: weekdayNames) {
                    rule.weekdays |= 1 << UInt8(weekday % 7)
                }
            }
        }
        return rule
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }
}
