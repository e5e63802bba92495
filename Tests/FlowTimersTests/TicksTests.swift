import Flow
import FlowTesting
import FlowTimers
import Testing

@Suite("Ticks as an AsyncSequence")
struct TicksTests {
    @Test("ticks(every:) yields drift-free ticks in order and stops its timer when iteration ends")
    func ticksOnALoop() async {
        let loop = EventLoop.startOnNewThread(name: "test.ticks")
        defer { loop.shutdown() }
        var numbers: [Int] = []
        var dueTimes: [UInt64] = []
        for await tick in loop.scheduler.ticks(every: 0.001) {
            numbers.append(tick.number)
            dueTimes.append(tick.dueUptimeNanoseconds)
            if numbers.count == 5 { break }
        }
        #expect(numbers == numbers.sorted() && Set(numbers).count == 5)
        // Each due time is the start plus a whole number of intervals: no drift accumulates.
        let intervals = zip(dueTimes.dropFirst(), dueTimes).map { ($0 - $1) % 1_000_000 }
        #expect(intervals.allSatisfy { $0 == 0 })
    }
}
