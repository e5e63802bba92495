import Dispatch
import Flow
import Synchronization
import Testing

@Suite("EventLoop")
struct EventLoopTests {
    @Test("work submitted from another thread runs on the loop's thread, with the loop as current scheduler")
    func workRunsOnTheLoop() {
        withLoopOnOwnThread { loop in
            let observed = Shared<(Bool, Bool, Bool)?>(nil)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                observed.mutate {
                    $0 = (loop.isInLoopContext, Scheduler.current == loop.scheduler, loop.scheduler.isExecuting)
                }
                done.signal()
            }
            expectSignal(done, "the job")
            #expect(observed.value! == (true, true, true))
            #expect(!loop.isInLoopContext)
        }
    }

    @Test("inside its own work a loop's scheduler is the one that work runs as; elsewhere an equal new one")
    func schedulerInsideTheLoopIsTheCurrentOne() {
        withLoopOnOwnThread { loop in
            let sameInstance = Shared<Bool?>(nil)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                sameInstance.mutate { $0 = loop.scheduler === Scheduler.current && loop.scheduler === loop.scheduler }
                done.signal()
            }
            expectSignal(done, "the job")
            #expect(sameInstance.value == true)
            #expect(loop.scheduler == loop.scheduler)
            #expect(loop.scheduler !== loop.scheduler)  // outside the loop: a small new one each time
        }
    }

    @Test("8 producer threads x 100k jobs each: every job runs exactly once, in order per producer")
    func manyProducersKeepOrder() {
        let producers = 8
        let jobsPerProducer = 100_000
        withLoopOnOwnThread { loop in
            // Touched only on the loop thread; the mutex just satisfies the compiler cheaply.
            let nextExpected = Shared([Int](repeating: 0, count: producers))
            let outOfOrder = Shared(0)
            let done = DispatchSemaphore(value: 0)
            DispatchQueue.concurrentPerform(iterations: producers) { producer in
                for index in 0..<jobsPerProducer {
                    loop.execute {
                        let expected = nextExpected.mutate { next -> Int in
                            let expected = next[producer]
                            next[producer] = index + 1
                            return expected
                        }
                        if expected != index { outOfOrder.mutate { $0 += 1 } }
                        if index == jobsPerProducer - 1 { done.signal() }
                    }
                }
            }
            for _ in 0..<producers { expectSignal(done, "the last job of a producer") }
            #expect(outOfOrder.value == 0)
            #expect(nextExpected.value == [Int](repeating: jobsPerProducer, count: producers))
        }
    }

    @Test("run() returns once the work is done, and not before work submitted earlier has run")
    func runReturnsWhenWorkIsDone() throws {
        let loop = EventLoop(name: "test.idle")
        defer { try? loop.close() }
        let ran = Shared([String]())
        let submitted = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for index in 0..<1000 { loop.execute { ran.mutate { $0.append("job \(index)") } } }
            submitted.signal()
        }
        expectSignal(submitted, "the submissions")
        loop.execute {
            loop.execute(after: 0.01) {
                ran.mutate { $0.append("delayed") }
                loop.execute { ran.mutate { $0.append("after delayed") } }
            }
        }
        try loop.run()
        #expect(ran.value.count == 1002)
        #expect(ran.value.last == "after delayed")
        // Nothing left: a second run returns at once.
        try loop.run()
    }

    @Test("stop() from another thread makes run() return while the loop is kept alive")
    func stopFromAnotherThread() {
        let loop = EventLoop(name: "test.stop")
        let keepAlive = loop.keepAlive()
        let started = DispatchSemaphore(value: 0)
        let returned = DispatchSemaphore(value: 0)
        let runError = Shared<EventLoopError?>(nil)
        BackgroundThread.detach {
            loop.execute { started.signal() }
            do throws(EventLoopError) { try loop.run() } catch { runError.mutate { $0 = error } }
            returned.signal()
        }
        expectSignal(started, "the loop to start")
        loop.stop()
        expectSignal(returned, "run() to return")
        #expect(runError.value == nil)
        keepAlive.dispose()
        #expect(throws: Never.self) { try loop.close() }
    }

    @Test("delayed work fires in deadline order, equal deadlines in scheduling order, and cancelled work never fires")
    func deadlinesFireInOrder() throws {
        let loop = EventLoop(name: "test.deadlines")
        defer { try? loop.close() }
        let fired = Shared([String]())
        loop.execute {
            loop.execute(after: 0.03) { fired.mutate { $0.append("30ms") } }
            loop.execute(after: 0.01) { fired.mutate { $0.append("10ms") } }
            let cancelled = loop.execute(after: 0.005) { fired.mutate { $0.append("cancelled") } }
            loop.execute(after: 0.02) { fired.mutate { $0.append("20ms") } }
            let deadline = EventLoop.uptimeNanoseconds + 15_000_000
            for index in 0..<3 {
                loop.execute(atUptimeNanoseconds: deadline) { fired.mutate { $0.append("same \(index)") } }
            }
            cancelled.dispose()
        }
        try loop.run()
        #expect(fired.value == ["10ms", "same 0", "same 1", "same 2", "20ms", "30ms"])
    }

    @Test("delayed work cancelled from another thread does not fire, and does not keep the loop alive")
    func crossThreadCancellation() {
        withLoopOnOwnThread { loop in
            let fired = Shared(false)
            let work = loop.execute(after: 3600) { fired.mutate { $0 = true } }
            work.dispose()
            let checked = DispatchSemaphore(value: 0)
            loop.execute { checked.signal() }
            expectSignal(checked, "the loop to process the cancellation")
            #expect(!fired.value)
        }
    }

    @Test("running a loop that is already running throws alreadyRunning, from its own thread and another")
    func runningTwiceIsAnError() {
        withLoopOnOwnThread { loop in
            let fromInside = Shared<EventLoopError?>(nil)
            let done = DispatchSemaphore(value: 0)
            loop.execute {
                do throws(EventLoopError) { try loop.run() } catch { fromInside.mutate { $0 = error } }
                done.signal()
            }
            expectSignal(done, "the nested run attempt")
            #expect(fromInside.value == .alreadyRunning)
            #expect(throws: EventLoopError.alreadyRunning) { try loop.run() }
        }
    }

    @Test("a closed loop refuses work with EventLoopError.closed, runs work submitted before close, and says so")
    func closedLoopRefusesWork() throws {
        let loop = EventLoop(name: "test.closed")
        let ran = Shared(false)
        loop.execute { ran.mutate { $0 = true } }
        try loop.close()
        #expect(ran.value, "work submitted before close() runs")
        #expect(loop.isClosed)
        #expect(throws: EventLoopError.closed) { try loop.submit {} }
        #expect(throws: EventLoopError.closed) { try loop.run() }
        #expect(throws: EventLoopError.closed) { try loop.close() }
        #expect(EventLoopError.closed.description.contains("closed"))
    }

    @Test("execute on a closed loop stops the program with a message naming the loop")
    func executeOnClosedLoopTraps() throws {
        let run = try runProbe("executeOnClosedLoop")
        #expect(run.status != 0)
        #expect(run.errorOutput.contains("work was submitted to the closed loop 'probe'"))
        #expect(!run.output.contains("must not run"))
    }

    @Test("a delay that is not a finite number stops the program with a message")
    func nonFiniteDelayTraps() throws {
        let run = try runProbe("nonFiniteDelay")
        #expect(run.status != 0)
        #expect(run.errorOutput.contains("the delay must be a finite number of seconds, not nan"))
    }

    @Test("EventLoop.main.run() on the main thread also runs DispatchQueue.main work")
    func mainLoopDrainsMainQueue() throws {
        let run = try runProbe("run")
        #expect(run.status == 0, "\(run.errorOutput)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.contains("main queue block ran on the main loop: true"))
        #expect(lines.contains("main scheduler work ran"))
        #expect(lines.contains("main queue block from another thread ran"))
        #expect(lines.contains("delayed main work ran"))
        #expect(lines.last == "run returned")
    }

    @Test("EventLoop.main.run() off the main thread throws; the main thread then runs it, its work and its stop()")
    func mainLoopRunOffTheMainThreadIsRefused() throws {
        let run = try runProbe("runOffMainThread")
        #expect(run.status == 0, "\(run.errorOutput)")
        let lines = run.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "another thread was refused: \(EventLoopError.mainLoopOffMainThread)")
        #expect(lines.contains("main thread work ran: true"))
        #expect(lines.last == "run returned after stop()")
    }

    @Test("Scheduler.main work runs when only dispatchMain() drives the main queue")
    func mainLoopUnderDispatchMain() throws {
        let run = try runProbe("dispatchMain")
        #expect(run.status == 0, "\(run.errorOutput)")
        #expect(run.output.contains("main scheduler work ran under dispatchMain: true"))
        #expect(run.output.contains("delayed main work ran under dispatchMain"))
    }

    @Test("Scheduler.main work runs in this test process, whose main queue Dispatch drives")
    func mainLoopUnderTheTestRunner() async {
        let observed = await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                Scheduler.main.async(after: 0.001) {
                    continuation.resume(returning: Scheduler.main.isExecuting && Scheduler.current == .main)
                }
            }
        }
        #expect(observed)
    }

    @Test("libuv errors read as libuv's name and message")
    func libuvErrorDescription() {
        #expect(EventLoop.describe(-111) == "ECONNREFUSED: connection refused")
        #expect(EventLoop.error(-98).description == "EADDRINUSE: address already in use")
    }
}

/// Starts a detached thread (a test-only convenience).
enum BackgroundThread {
    static func detach(_ body: @escaping @Sendable () -> Void) {
        DispatchQueue.global().async(execute: body)
    }
}
