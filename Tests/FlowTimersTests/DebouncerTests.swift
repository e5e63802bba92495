import Flow
import FlowTesting
import FlowTimers
import Testing

@Suite("Debouncer")
struct DebouncerTests {
    @Test("only the latest call's work runs, once the quiet period has passed, and every caller gets its result")
    func latestWorkRunsAfterQuietPeriod() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let debouncer = Debouncer<String>(on: scheduler, interval: 0.3)
        let ran = Recorder<(String, Int64)>()
        let results = Recorder<String>()
        for (query, time) in [("s", 0), ("sw", 100), ("swi", 250), ("swift", 500)] {
            clock.advance(to: .milliseconds(time))
            _ = scheduler.sync {
                debouncer {
                    ran.append((query, clock.nowMilliseconds))
                    return Future("results for \(query)")
                }
                .onValue { results.append($0) }
            }
        }
        clock.runUntilIdle()
        #expect(ran.values.map(\.0) == ["swift"])
        #expect(ran.values.map(\.1) == [800])
        #expect(results.values == Array(repeating: "results for swift", count: 4))
    }

    @Test("calls separated by more than the quiet period each run")
    func separatedCallsEachRun() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let debouncer = Debouncer<Int>(on: scheduler, interval: 1)
        let ran = Recorder<(Int, Int64)>()
        for (value, time) in [(1, 0), (2, 5000)] {
            clock.advance(to: .milliseconds(time))
            _ = scheduler.sync { debouncer { ran.append((value, clock.nowMilliseconds)); return Future(value) } }
        }
        clock.runUntilIdle()
        #expect(ran.values.map(\.0) == [1, 2])
        #expect(ran.values.map(\.1) == [1000, 6000])
    }

    @Test("when every waiting caller cancels, the pending work is dropped")
    func cancelledCallersDropTheWork() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let debouncer = Debouncer<Int>(on: scheduler, interval: 1)
        let ran = Recorder<Int>()
        let first = scheduler.sync { debouncer { ran.append(1); return Future(1) } }
        let second = scheduler.sync { debouncer { ran.append(2); return Future(2) } }
        first.cancel()
        #expect(clock.pendingCount == 1)
        second.cancel()
        #expect(clock.pendingCount == 0)
        clock.runUntilIdle()
        #expect(ran.values.isEmpty)
    }
}
