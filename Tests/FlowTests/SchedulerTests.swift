import Dispatch
import Flow
import Synchronization
import Testing

@Suite("Scheduler")
struct SchedulerTests {
    @Test("a queue scheduler runs work on its queue and is current there")
    func queueSchedulerRunsOnItsQueue() async {
        let scheduler = Scheduler(label: "test.queue")
        let observed = await withCheckedContinuation { continuation in
            scheduler.async {
                continuation.resume(returning: (scheduler.isExecuting, Scheduler.current == scheduler))
            }
        }
        #expect(observed == (true, true))
        #expect(!scheduler.isExecuting)
    }

    @Test("work for the scheduler already executing runs at once; for another, later")
    func immediateWhenAlreadyExecuting() {
        withLoopOnOwnThread { loop in
            let order = Shared([String]())
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                loop.scheduler.async { order.mutate { $0.append("same scheduler: immediate") } }
                order.mutate { $0.append("after async call") }
                loop.execute { order.mutate { $0.append("loop.execute: later") }; done.signal() }
                order.mutate { $0.append("end of job") }
            }
            expectSignal(done, "the queued job")
            #expect(order.value == ["same scheduler: immediate", "after async call", "end of job", "loop.execute: later"])
        }
    }

    @Test("a million nested immediate calls do not overflow the stack, and all run in order")
    func nestedImmediateWorkIsStackSafe() {
        let count = Shared(0)
        let last = Shared(-1)
        @Sendable func step(_ index: Int) {
            Scheduler.none.async {
                count.mutate { $0 += 1 }
                if index == 999_999 {
                    last.mutate { $0 = index }
                } else {
                    step(index + 1)
                }
            }
        }
        step(0)
        #expect(count.value == 1_000_000)
        #expect(last.value == 999_999)
    }

    @Test(".none is immediate everywhere; async(after:) on it still waits")
    func noneScheduler() {
        #expect(Scheduler.none.isImmediate)
        let ran = Shared(false)
        Scheduler.none.async { ran.mutate { $0 = true } }
        #expect(ran.value)
        let delayed = DispatchSemaphore(value: 0)
        Scheduler.none.async(after: 0.001) { delayed.signal() }
        expectSignal(delayed, "delayed work on .none")
    }

    @Test("sync runs work in the scheduler's context and returns its value, and the throwing form rethrows")
    func syncReturnsAndRethrows() throws {
        struct Failure: Error {}
        let queue = Scheduler(label: "test.sync")
        #expect(queue.sync { queue.isExecuting })
        #expect(throws: Failure.self) { try queue.sync { () throws -> Int in throw Failure() } }
        try withLoopOnOwnThread { loop in
            let answer = loop.scheduler.sync { loop.isInLoopContext ? 42 : 0 }
            #expect(answer == 42)
            let seven = try loop.scheduler.perform { () throws -> Int in 7 }
            #expect(seven == 7)
        }
    }

    @Test("schedulers over the same queue or loop are equal; different ones are not")
    func equality() {
        let queue = DispatchQueue(label: "test.equality")
        #expect(Scheduler(queue: queue) == Scheduler(queue: queue))
        #expect(Scheduler(queue: queue) != Scheduler(label: "other"))
        #expect(Scheduler.main == EventLoop.main.scheduler)
        #expect(Scheduler.main != .background)
        let identity = DispatchQueue(label: "test.identity")
        let custom = Scheduler(identifyingObject: identity, async: { identity.async(execute: $0) }, sync: { identity.sync(execute: $0) })
        #expect(custom == Scheduler(identifyingObject: identity, async: { _ in }, sync: { _ in }))
    }

    @Test("off any scheduler, .current is .background on a thread that is not the main thread")
    func currentOffScheduler() async {
        let current = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: Scheduler.current) }
        }
        #expect(current == .background)
    }

    @Test("async(after:) on a queue scheduler runs later on that queue; disposing first cancels it")
    func queueDelays() {
        let scheduler = Scheduler(label: "test.delays")
        let ran = Shared([String]())
        let done = DispatchSemaphore(value: 0)
        let cancelled = scheduler.async(after: 3600) { ran.mutate { $0.append("cancelled") } }
        cancelled.dispose()
        scheduler.async(after: 0.002) {
            ran.mutate { $0.append(scheduler.isExecuting ? "on queue" : "elsewhere") }
            done.signal()
        }
        expectSignal(done, "delayed work")
        #expect(ran.value == ["on queue"])
    }
}
