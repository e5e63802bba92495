import Flow
import FlowTesting
import Testing

@Suite("VirtualTimeScheduler")
struct VirtualTimeSchedulerTests {
    @Test("work enqueued without delay waits for the next advance")
    func enqueuedWorkWaitsForAdvance() {
        let clock = VirtualTimeScheduler()
        let ran = Recorder<String>()
        clock.scheduler.async { ran.append("first") }
        clock.scheduler.async { ran.append("second") }
        #expect(ran.values.isEmpty)
        #expect(clock.pendingCount == 2)
        clock.advance(by: .zero)
        #expect(ran.values == ["first", "second"])
        #expect(clock.now == .zero)
        #expect(clock.pendingCount == 0)
    }

    @Test("advancing runs due work in time order, with now at each due time")
    func advanceRunsInTimeOrder() {
        let clock = VirtualTimeScheduler()
        let ran = Recorder<(String, Int64)>()
        for (name, delay) in [("c", 3.0), ("a", 1.0), ("b", 2.0), ("late", 10.0)] {
            clock.scheduler.async(after: delay) { ran.append((name, clock.nowMilliseconds)) }
        }
        clock.advance(by: .seconds(5))
        #expect(ran.values.map(\.0) == ["a", "b", "c"])
        #expect(ran.values.map(\.1) == [1000, 2000, 3000])
        #expect(clock.now == .seconds(5))
        #expect(clock.pendingCount == 1)
        #expect(clock.nextDueTime == .seconds(10))
        // The late work holds the clock (it reads `now`): run it, or the two keep each other alive.
        clock.runUntilIdle()
    }

    @Test("work due at the same instant runs in scheduling order")
    func sameInstantKeepsSchedulingOrder() {
        let clock = VirtualTimeScheduler()
        let ran = Recorder<Int>()
        for index in 0..<50 {
            clock.scheduler.async(after: 1) { ran.append(index) }
        }
        clock.advance(by: 1.0)
        #expect(ran.values == Array(0..<50))
    }

    @Test("work scheduled by work during an advance runs in the same advance when due")
    func nestedWorkRunsDuringAdvance() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        let ran = Recorder<(String, Int64)>()
        scheduler.async(after: 1) {
            ran.append(("outer", clock.nowMilliseconds))
            scheduler.async(after: 0.5) { ran.append(("inner", clock.nowMilliseconds)) }
            scheduler.async(after: 5) { ran.append(("beyond", clock.nowMilliseconds)) }
            clock.scheduler.async { ran.append(("now", clock.nowMilliseconds)) }
        }
        scheduler.async(after: 2) { ran.append(("two", clock.nowMilliseconds)) }
        clock.advance(to: .seconds(3))
        #expect(ran.values.map(\.0) == ["outer", "now", "inner", "two"])
        #expect(ran.values.map(\.1) == [1000, 1000, 1500, 2000])
        #expect(clock.pendingCount == 1)
        // The work left holds the clock (it reads `now`): run it, or the two keep each other alive.
        clock.runUntilIdle()
    }

    @Test("the virtual scheduler is current inside its work")
    func schedulerIsCurrentInsideWork() {
        let clock = VirtualTimeScheduler()
        let wasCurrent = Shared(false)
        clock.scheduler.async(after: 1) { wasCurrent.mutate { $0 = Scheduler.current == clock.scheduler } }
        clock.runUntilIdle()
        #expect(wasCurrent.value)
        #expect(clock.scheduler.uptimeNanoseconds == 1_000_000_000)
    }

    @Test("disposed work never runs and no longer counts as pending")
    func disposedWorkNeverRuns() {
        let clock = VirtualTimeScheduler()
        let ran = Recorder<String>()
        let cancelled = clock.scheduler.async(after: 1) { ran.append("cancelled") }
        clock.scheduler.async(after: 2) { ran.append("kept") }
        #expect(clock.pendingCount == 2)
        cancelled.dispose()
        #expect(clock.pendingCount == 1)
        clock.runUntilIdle()
        #expect(ran.values == ["kept"])
        #expect(clock.now == .seconds(2))
    }

    @Test("a clock let go of with work pending releases the work, and its schedulers drop later work")
    func droppedClockReleasesItsWork() {
        final class Payload: Sendable {}
        var clock: VirtualTimeScheduler? = VirtualTimeScheduler()
        let scheduler = clock!.scheduler
        var payload: Payload? = Payload()
        weak let pendingPayload = payload
        // Pending work holding its scheduler and its own disposable, as timers do.
        let disposable = Shared<Disposable?>(nil)
        disposable.mutate { [payload] stored in
            stored = scheduler.async(after: 1) { withExtendedLifetime((payload, scheduler, disposable)) {} }
        }
        scheduler.async { [payload] in withExtendedLifetime(payload) {} }
        payload = nil
        clock?.advance(by: 0.5)
        #expect(pendingPayload != nil)
        clock = nil
        #expect(pendingPayload == nil)

        var late: Payload? = Payload()
        weak let latePayload = late
        scheduler.async(after: 1) { [late] in withExtendedLifetime(late) {} }
        late = nil
        #expect(latePayload == nil)
        #expect(scheduler.uptimeNanoseconds == 500_000_000)
    }

    @Test("runUntilIdle stops after its step limit when work never stops scheduling")
    func runUntilIdleHasAStepLimit() {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        @Sendable func again() { scheduler.async(after: 1, execute: again) }
        again()
        #expect(clock.runUntilIdle(maximumSteps: 100) == false)
        #expect(clock.now == .seconds(100))
    }

    @Test("jump moves time without running work; the overdue work runs late on the next advance")
    func jumpLeavesWorkOverdue() {
        let clock = VirtualTimeScheduler()
        let ran = Recorder<Int64>()
        clock.scheduler.async(after: 1) { ran.append(clock.nowMilliseconds) }
        clock.jump(by: .seconds(3))
        #expect(ran.values.isEmpty)
        clock.advance(by: .zero)
        #expect(ran.values == [3000])
    }

    @Test("a past target for advance(to:) runs only what is due now")
    func advanceToThePastDoesNotMoveBack() {
        let clock = VirtualTimeScheduler()
        clock.advance(by: .seconds(5))
        let ran = Recorder<Int64>()
        clock.scheduler.async { ran.append(clock.nowMilliseconds) }
        clock.advance(to: .seconds(1))
        #expect(ran.values == [5000])
        #expect(clock.now == .seconds(5))
    }

    @Test("waitUntilPending returns once that much work is pending, at once if it already is", .timeLimit(.minutes(1)))
    func waitUntilPendingReturnsOnceWorkIsScheduled() async {
        let clock = VirtualTimeScheduler()
        let scheduler = clock.scheduler
        scheduler.async(after: 1) {}
        let waiting = Task {
            await clock.waitUntilPending(atLeast: 2)
            return clock.pendingCount
        }
        scheduler.async(after: 2) {}
        #expect(await waiting.value == 2)
        await clock.waitUntilPending(atLeast: 2)
        clock.advance(by: 2)
        #expect(clock.pendingCount == 0)
        // Work scheduled without a delay counts too.
        let again = Task { await clock.waitUntilPending() }
        scheduler.async {}
        await again.value
        #expect(clock.pendingCount == 1)
    }

    @Test("cancelling a task in waitUntilPending ends its wait", .timeLimit(.minutes(1)))
    func cancellingEndsTheWaitForPendingWork() async {
        let clock = VirtualTimeScheduler()
        let waiting = Task { await clock.waitUntilPending() }
        waiting.cancel()
        await waiting.value
        #expect(clock.pendingCount == 0)
    }
}
