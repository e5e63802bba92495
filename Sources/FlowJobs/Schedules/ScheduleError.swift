/// Why a ``JobSchedule`` could not be made: each case names the part of the input at fault.
///
/// Schedules are checked when they are made, never when they would fire:
///
/// ```swift
/// do {
///     _ = try JobSchedule(cron: "*/0 * * * *")
/// } catch let error as ScheduleError {
///     print(error)  // the minute field "*/0": a step must be at least 1
/// }
/// ```
public enum ScheduleError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The expression has the wrong number of fields (five, or six with seconds first), or an unknown `@` macro.
    case malformedExpression(expression: String, reason: String)
    /// One field of the expression is invalid: `field` is its name ("minute", "day of month", ...), `text` its
    /// text, `reason` what is wrong with it.
    case invalidField(field: String, text: String, reason: String)
    /// The expression is valid field by field but matches no date at all (February 30, say).
    case neverFires(expression: String)
    /// The time zone identifier names no zone in the system's zone database.
    case unknownTimeZone(identifier: String)
    /// An interval schedule's interval is not a whole number of seconds, at least one.
    case invalidInterval(reason: String)

    /// A sentence naming the field at fault and what is wrong with it.
    public var description: String {
        switch self {
        case .malformedExpression(let expression, let reason):
            return "the cron expression \"\(expression)\": \(reason)"
        case .invalidField(let field, let text, let reason):
            return "the \(field) field \"\(text)\": \(reason)"
        case .neverFires(let expression):
            return "the cron expression \"\(expression)\" matches no date, so it would never fire"
        case .unknownTimeZone(let identifier):
            return "the time zone \"\(identifier)\" is not in the system's zone database"
        case .invalidInterval(let reason):
            return "the interval: \(reason)"
        }
    }
}
