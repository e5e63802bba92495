import Flow
import Testing

/// `Scheduler.sync` between loops that wait for each other: stopped with a message naming the loops
/// instead of a silent deadlock; waits that do not close a cycle are left alone.
@Suite("Misuse: Scheduler.sync cycles between loops")
struct SyncCycleTests {
    @Test("a loop's work waiting in sync for a loop that waits in sync for it stops the program, naming both loops")
    func twoLoopCycleStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = EventLoop.startOnNewThread(name: "cycle.first")
            let second = EventLoop.startOnNewThread(name: "cycle.second")
            _ = first.scheduler.sync { second.scheduler.sync { first.scheduler.sync { 42 } } }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains(
            "Scheduler.sync: the event loop 'cycle.second' would wait for the loop 'cycle.first', which is itself "
                + "waiting in Scheduler.sync for 'cycle.second'"))
    }

    @Test("a cycle through three loops stops the program, naming the loops along it")
    func threeLoopCycleStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = EventLoop.startOnNewThread(name: "cycle.first")
            let second = EventLoop.startOnNewThread(name: "cycle.second")
            let third = EventLoop.startOnNewThread(name: "cycle.third")
            _ = first.scheduler.sync {
                second.scheduler.sync { third.scheduler.sync { first.scheduler.sync { 42 } } }
            }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains(
            "the event loop 'cycle.third' would wait for the loop 'cycle.first', which is itself waiting in "
                + "Scheduler.sync for 'cycle.second', which waits for 'cycle.third'"))
    }

    @Test("nested sync through loops that do not wait for each other runs, and leaves no wait recorded")
    func nestedSyncWithoutACycleRuns() {
        let first = EventLoop.startOnNewThread(name: "nested.first")
        let second = EventLoop.startOnNewThread(name: "nested.second")
        defer {
            first.shutdown()
            second.shutdown()
        }
        #expect(first.scheduler.sync { second.scheduler.sync { 42 } } == 42)
        // The first loop's wait for the second ended: the second may now wait for the first.
        #expect(second.scheduler.sync { first.scheduler.sync { 43 } } == 43)
    }
}
