import Dispatch
import Flow
import FlowTesting
import FlowTimers
import Testing

@Suite("One-shot and repeating timers")
struct TimerTests {
    // MARK: Virtual time

    @Test("one-shot timers fire in deadline order, ties in scheduling order")
    func oneShotTimersFireInDeadlineOrder() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let fired = Recorder<(String, Int64)>()
        scheduler.timer(after: 0.3) { fired.append(("c", clock.nowMilliseconds)) }
        scheduler.timer(after: 0.1) { fired.append(("a", clock.nowMilliseconds)) }
        scheduler.timer(atUptimeNanoseconds: 200_000_000) { fired.append(("b1", clock.nowMilliseconds)) }
        scheduler.timer(after: 0.2) { fired.append(("b2", clock.nowMilliseconds)) }
        clock.runUntilIdle()
        #expect(fired.values.map(\.0) == ["a", "b1", "b2", "c"])
        #expect(fired.values.map(\.1) == [100, 200, 200, 300])
    }

    @Test("a one-shot timer disposed before its deadline never fires")
    func oneShotDisposedBeforeFiring() {
        let clock = VirtualTimeScheduler()
        let fired = Recorder<String>()
        let timer = clock.scheduler.timer(after: 1) { fired.append("fired") }
        clock.advance(by: 0.5)
        timer.dispose()
        clock.runUntilIdle()
        #expect(fired.values.isEmpty)
        #expect(clock.pendingCount == 0)
    }

    @Test("a timer disposed by another timer firing at the same instant never fires")
    func timerDisposedDuringFiringOfTheSameInstant() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let fired = Recorder<String>()
        let victim = Shared<Disposable?>(nil)
        scheduler.timer(after: 1) {
            fired.append("first")
            victim.value?.dispose()
        }
        victim.mutate { $0 = scheduler.timer(after: 1) { fired.append("victim") } }
        clock.runUntilIdle()
        #expect(fired.values == ["first"])
    }

    @Test("repeating ticks land at exact multiples of the interval, without drift")
    func repeatingTicksDoNotDrift() {
        let clock = VirtualTimeScheduler()
        let ticks = Recorder<(TimerTick, UInt64)>()
        let timer = clock.scheduler.repeatingTimer(every: 0.3) { tick in
            ticks.append((tick, clock.uptimeNanoseconds))
        }
        clock.advance(by: .seconds(300))
        timer.dispose()
        #expect(ticks.count == 1000)
        let expected = (1...1000).map { UInt64($0) * 300_000_000 }
        #expect(ticks.values.map(\.1) == expected)
        #expect(ticks.values.map(\.0.dueUptimeNanoseconds) == expected)
        #expect(ticks.values.map(\.0.number) == Array(1...1000))
        #expect(clock.pendingCount == 0)
    }

    @Test("the first tick can come after its own delay, including none")
    func initialDelay() {
        let clock = VirtualTimeScheduler()
        let times = Recorder<Int64>()
        let timer = clock.scheduler.repeatingTimer(every: 1, startingAfter: 0) { times.append(clock.nowMilliseconds) }
        clock.advance(by: .milliseconds(2500))
        timer.dispose()
        #expect(times.values == [0, 1000, 2000])
    }

    @Test("a repeating timer disposed from its own work stops at once")
    func repeatingTimerDisposedFromItsWork() {
        let clock = VirtualTimeScheduler()
        let count = Shared(0)
        let timer = Shared<Disposable?>(nil)
        timer.mutate { stored in
            stored = clock.scheduler.repeatingTimer(every: 1) {
                if count.mutate({ $0 += 1; return $0 }) == 3 { timer.value?.dispose() }
            }
        }
        clock.advance(by: .seconds(10))
        #expect(count.value == 3)
        #expect(clock.pendingCount == 0)
    }

    @Test("a disposed repeating timer lets go of its work")
    func disposedRepeatingTimerReleasesItsWork() {
        final class Payload: Sendable {}
        let clock = VirtualTimeScheduler()
        var payload: Payload? = Payload()
        weak let workPayload = payload
        let timer = clock.scheduler.repeatingTimer(every: 1) { [payload] in withExtendedLifetime(payload) {} }
        payload = nil
        clock.advance(by: 2.5)
        #expect(workPayload != nil)
        timer.dispose()
        #expect(workPayload == nil)
    }

    @Test("a repeating timer disposed between ticks never fires again")
    func repeatingTimerDisposedBetweenTicks() {
        let clock = VirtualTimeScheduler()
        let count = Shared(0)
        let timer = clock.scheduler.repeatingTimer(every: 1) { count.mutate { $0 += 1 } }
        clock.advance(by: 2.5)
        timer.dispose()
        clock.advance(by: .seconds(10))
        #expect(count.value == 2)
        #expect(clock.pendingCount == 0)
    }

    // MARK: Missed ticks

    /// Ticks every second while the scheduler is blocked until 3.5 s, then runs to 6 s; returns
    /// (time fired in ms, tick number, due time in ms, skipped count) per tick.
    private func ticksAfterBlocking(_ policy: MissedTickPolicy) -> [(Int64, Int, UInt64, Int)] {
        let clock = VirtualTimeScheduler()
        let ticks = Recorder<(Int64, Int, UInt64, Int)>()
        let timer = clock.scheduler.repeatingTimer(every: 1, missedTicks: policy) { tick in
            ticks.append((clock.nowMilliseconds, tick.number, tick.dueUptimeNanoseconds / 1_000_000, tick.skippedCount))
        }
        clock.jump(by: .milliseconds(3500))
        clock.advance(to: .seconds(6))
        timer.dispose()
        return ticks.values
    }

    @Test("burst fires every missed tick at once, then keeps the original schedule")
    func burstPolicy() {
        let ticks = ticksAfterBlocking(.burst)
        #expect(ticks.map(\.0) == [3500, 3500, 3500, 4000, 5000, 6000])
        #expect(ticks.map(\.2) == [1000, 2000, 3000, 4000, 5000, 6000])
        #expect(ticks.map(\.3) == [0, 0, 0, 0, 0, 0])
    }

    @Test("skip drops the missed ticks and resumes on the original schedule")
    func skipPolicy() {
        let ticks = ticksAfterBlocking(.skip)
        #expect(ticks.map(\.0) == [3500, 4000, 5000, 6000])
        #expect(ticks.map(\.1) == [1, 2, 3, 4])
        #expect(ticks.map(\.2) == [1000, 4000, 5000, 6000])
        #expect(ticks.map(\.3) == [0, 2, 0, 0])
    }

    @Test("delay restarts the schedule one interval after the miss")
    func delayPolicy() {
        let ticks = ticksAfterBlocking(.delay)
        #expect(ticks.map(\.0) == [3500, 4500, 5500])
        #expect(ticks.map(\.2) == [1000, 4500, 5500])
    }

    /// Ticks every second; the work of the first tick takes 1.5 s; returns the times ticks fired, in ms.
    private func fireTimesWithSlowFirstTick(_ policy: MissedTickPolicy) -> [Int64] {
        let clock = VirtualTimeScheduler()
        let times = Recorder<Int64>()
        let timer = clock.scheduler.repeatingTimer(every: 1, missedTicks: policy) { tick in
            times.append(clock.nowMilliseconds)
            if tick.number == 1 { clock.jump(by: .milliseconds(1500)) }
        }
        clock.advance(to: .seconds(5))
        timer.dispose()
        return times.values
    }

    @Test("a tick whose work overruns the interval: each policy's next ticks")
    func slowWorkUnderEachPolicy() {
        #expect(fireTimesWithSlowFirstTick(.burst) == [1000, 2500, 3000, 4000, 5000])
        #expect(fireTimesWithSlowFirstTick(.skip) == [1000, 3000, 4000, 5000])
        #expect(fireTimesWithSlowFirstTick(.delay) == [1000, 3500, 4500])
    }

    // MARK: Real loops and queues: order and counts only

    @Test("timers requested from other threads fire on the loop in deadline order")
    func timersFromOtherThreadsFireInDeadlineOrder() {
        withLoopOnOwnThread { loop in
            let scheduler: Scheduler = loop.scheduler
            let threadCount = 8
            let timersPerThread = 50
            let total = threadCount * timersPerThread
            // Hold the loop so that every timer is in its heap before the first one fires.
            let releaseLoop = holdLoop(loop)
            let base = scheduler.uptimeNanoseconds
            let fired = Recorder<UInt64>()
            let firedOnLoop = Shared(true)
            let allFired = DispatchSemaphore(value: 0)
            DispatchQueue.concurrentPerform(iterations: threadCount) { thread in
                for index in 0..<timersPerThread {
                    // Interleave the threads' deadlines, and make later requests sometimes earlier.
                    let offset = UInt64((index * threadCount + thread) * 7 % total)
                    scheduler.timer(atUptimeNanoseconds: base + offset * 1_000) {
                        if !loop.isInLoopContext { firedOnLoop.mutate { $0 = false } }
                        fired.append(offset)
                        if fired.count == total { allFired.signal() }
                    }
                }
            }
            releaseLoop.signal()
            expectSignal(allFired, "every timer to fire")
            #expect(fired.values == fired.values.sorted())
            #expect(Set(fired.values).count == total)
            #expect(firedOnLoop.value)
        }
    }

    @Test("timers disposed from another thread before firing never fire")
    func timersDisposedFromAnotherThread() {
        withLoopOnOwnThread { loop in
            let scheduler: Scheduler = loop.scheduler
            let releaseLoop = holdLoop(loop)
            let fired = Recorder<Int>()
            let timers = (0..<100).map { index in scheduler.timer(after: 0) { fired.append(index) } }
            for (index, timer) in timers.enumerated() where index % 2 == 0 {
                timer.dispose()
            }
            let done = DispatchSemaphore(value: 0)
            scheduler.timer(after: 0.001) { done.signal() }
            releaseLoop.signal()
            expectSignal(done, "the last timer")
            #expect(fired.values == Array(stride(from: 1, to: 100, by: 2)))
        }
    }

    @Test("a repeating timer on a loop stops when disposed from its own tick")
    func repeatingTimerOnLoopStops() {
        withLoopOnOwnThread { loop in
            let scheduler: Scheduler = loop.scheduler
            let count = Shared(0)
            let timer = Shared<Disposable?>(nil)
            let stopped = DispatchSemaphore(value: 0)
            let armed = DispatchSemaphore(value: 0)
            loop.execute {
                // Created on the loop so that the disposable is stored before the first tick.
                timer.mutate { stored in
                    stored = scheduler.repeatingTimer(every: 0.001) {
                        if count.mutate({ $0 += 1; return $0 }) == 5 {
                            timer.value?.dispose()
                            // Due after tick 6 would have been: it fires first only if the timer stopped.
                            scheduler.timer(after: 0.01) { stopped.signal() }
                        }
                    }
                }
                armed.signal()
            }
            expectSignal(armed, "the timer to be created")
            expectSignal(stopped, "the check after the timer stopped")
            #expect(count.value == 5)
        }
    }

    @Test("a repeating timer on a Dispatch queue stops when disposed, and runs on its scheduler")
    func repeatingTimerOnQueueStops() {
        let scheduler = Scheduler(label: "timers.test.queue")
        let count = Shared(0)
        let onScheduler = Shared(true)
        let reachedThree = DispatchSemaphore(value: 0)
        let timer = scheduler.repeatingTimer(every: 0.001) {
            if !scheduler.isExecuting { onScheduler.mutate { $0 = false } }
            if count.mutate({ $0 += 1; return $0 }) == 3 { reachedThree.signal() }
        }
        expectSignal(reachedThree, "three ticks")
        scheduler.sync { timer.dispose() }
        let countAtDisposal = count.value
        let checked = DispatchSemaphore(value: 0)
        scheduler.timer(after: 0.01) { checked.signal() }
        expectSignal(checked, "the check after disposal")
        #expect(count.value == countAtDisposal)
        #expect(countAtDisposal >= 3)
        #expect(onScheduler.value)
    }
}
