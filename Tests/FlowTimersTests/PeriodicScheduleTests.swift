@testable import FlowTimers
import Testing

@Suite("PeriodicSchedule state machine")
struct PeriodicScheduleTests {
    @Test("on time, every due time is the first plus a whole number of intervals")
    func onTime() {
        var schedule = PeriodicSchedule(firstDueTime: 7, intervalNanoseconds: 10, missedTicks: .skip)
        var dueTimes = [schedule.dueTime]
        for _ in 0..<4 { dueTimes.append(schedule.advance(now: schedule.dueTime)) }
        #expect(dueTimes == [7, 17, 27, 37, 47])
    }

    @Test("a next tick due exactly now is not missed")
    func dueExactlyNowIsNotMissed() {
        var schedule = PeriodicSchedule(firstDueTime: 10, intervalNanoseconds: 10, missedTicks: .delay)
        #expect(schedule.advance(now: 20) == 20)
        #expect(schedule.skippedCount == 0)
    }

    @Test("skip lands on the first due time not in the past and counts the skipped ticks")
    func skip() {
        var schedule = PeriodicSchedule(firstDueTime: 10, intervalNanoseconds: 10, missedTicks: .skip)
        #expect(schedule.advance(now: 45) == 50)
        #expect(schedule.skippedCount == 3)
        #expect(schedule.advance(now: 50) == 60)
        #expect(schedule.skippedCount == 0)
        #expect(schedule.advance(now: 80) == 80)
        #expect(schedule.skippedCount == 1)
    }

    @Test("burst hands out every missed due time in turn")
    func burst() {
        var schedule = PeriodicSchedule(firstDueTime: 10, intervalNanoseconds: 10, missedTicks: .burst)
        #expect([45, 45, 45, 45].map { schedule.advance(now: $0) } == [20, 30, 40, 50])
    }

    @Test("delay re-anchors the schedule one interval after now")
    func delay() {
        var schedule = PeriodicSchedule(firstDueTime: 10, intervalNanoseconds: 10, missedTicks: .delay)
        #expect(schedule.advance(now: 45) == 55)
        #expect(schedule.advance(now: 55) == 65)
    }

    @Test("due times far in the future saturate instead of overflowing")
    func saturation() {
        var schedule = PeriodicSchedule(firstDueTime: .max - 5, intervalNanoseconds: 10, missedTicks: .skip)
        #expect(schedule.advance(now: .max - 5) == .max)
    }
}
