/// Proleptic Gregorian calendar arithmetic on day numbers (days since 1970-01-01), for schedules: a cron
/// expression is matched against wall-clock fields counted as if the zone were UTC, and the zone's offset is
/// applied afterwards, so the day loop never asks Foundation for a calendar.
struct CivilDate: Hashable, Sendable {
    var year: Int
    /// 1 to 12.
    var month: Int
    /// 1 to 31.
    var day: Int

    /// The date of day number `days` (Howard Hinnant's `civil_from_days`).
    init(days: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The day number of this date (Howard Hinnant's `days_from_civil`).
    var days: Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// 0 for Sunday to 6 for Saturday, as cron counts.
    var weekday: Int { Self.weekday(ofDay: days) }

    /// The number of days in this date's month.
    var daysInMonth: Int { Self.daysIn(year: year, month: month) }

    static func weekday(ofDay days: Int) -> Int {
        // 1970-01-01 was a Thursday (4).
        let remainder = (days + 4) % 7
        return remainder < 0 ? remainder + 7 : remainder
    }

    static func daysIn(year: Int, month: Int) -> Int {
        switch month {
        case 2:
            let isLeap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return isLeap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

extension Int {
    /// Division rounding towards negative infinity, for day numbers of instants before 1970.
    func flooredDivision(by divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
