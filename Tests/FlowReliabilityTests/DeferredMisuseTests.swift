import Deferred
import Dispatch
import Flow
import Testing

@Suite("Misuse: Deferred")
struct DeferredMisuseTests {
    @Test("filling a Deferred twice: the second fill returns false and the value and readers are unchanged")
    func fillingTwiceKeepsTheFirstValue() {
        let deferred = Deferred<Int>()
        let reads = Guarded<[Int]>([])
        deferred.upon(.none as Flow.Scheduler) { value in reads.withLock { $0.append(value) } }
        #expect(deferred.fill(with: 1))
        #expect(!deferred.fill(with: 2))
        #expect(deferred.peek() == 1)
        #expect(reads.current == [1])
    }

    @Test("mustFill on a filled Deferred stops the program with a message")
    func mustFillTwiceStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let deferred = Deferred<Int>()
            deferred.mustFill(with: 1)
            deferred.mustFill(with: 2)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("mustFill(with:): the promise was already filled"))
    }

    @Test("waiting on a running loop's thread for an unfilled Deferred stops the program instead of deadlocking")
    func waitingOnTheLoopThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = EventLoop.startOnNewThread(name: "misuse.wait")
            let deferred = Deferred<Int>()
            loop.scheduler.sync { _ = deferred.wait(until: .distantFuture) }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        let expected = "called inside the work of the event loop 'misuse.wait', which cannot run while its thread waits"
        #expect(message.contains(expected))
    }

    @Test("waiting on a loop's thread for a filled Deferred returns the value")
    func waitingOnTheLoopThreadForAFilledValueReturns() {
        let loop = EventLoop.startOnNewThread(name: "misuse.waitFilled")
        defer { loop.shutdown() }
        let deferred = Deferred<Int>(filledWith: 5)
        #expect(loop.scheduler.sync { deferred.wait(until: .distantFuture) } == 5)
    }
}
