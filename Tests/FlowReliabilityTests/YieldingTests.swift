import Dispatch
import Flow
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Work that would never give its scheduler back: an operation failing at once, repeated without
/// limit and without delay, and a timer re-armed with no delay from its own callback. Both must let
/// the scheduler's other work run (a timer, a job from another thread, a cancel, a stop).
@Suite("Immediate repetitions and zero-delay timers yield to the loop")
struct YieldingTests {
    private struct Failure: Error {}

    /// A future failing at once, counting its runs.
    private static func failingAtOnce(counting runs: AtomicCounter) -> Future<Int> {
        Future<Int>(on: .none) { completion in
            runs.increment()
            completion(.failure(Failure()))
            return NilDisposer()
        }
    }

    /// What a repetition left behind once cancelled: the runs when `cancel()` was called and after
    /// the scheduler ran its queue again, and the repeating future's result.
    private struct Stopped: Sendable {
        let runsWhenReturned: Int
        let runsWhenCancelled: Int
        let runsAfterwards: Int
        let wasCancelled: Bool
    }

    @Test("onErrorRepeat(maxRepetitions: Int.max) of a future failing at once returns; a timer on its loop fires meanwhile and cancel() stops it")
    func unlimitedImmediateRepetitionsYieldOnALoop() {
        let runs = AtomicCounter()
        let stopped = Guarded<Stopped?>(nil)
        let done = DispatchSemaphore(value: 0)
        withLoopOnOwnThread(name: "test.repeat") { loop in
            loop.execute {
                let repeated = YieldingTests.failingAtOnce(counting: runs).onErrorRepeat(maxRepetitions: Int.max)
                let runsWhenReturned = runs.current
                // A timer of the same loop: it fires only if the repetitions let the loop go round.
                loop.execute(after: 0.001) {
                    repeated.cancel()
                    let runsWhenCancelled = runs.current
                    let wasCancelled = repeated.result?.error as? FutureError == .aborted
                    loop.execute {
                        stopped.withLock {
                            $0 = Stopped(runsWhenReturned: runsWhenReturned, runsWhenCancelled: runsWhenCancelled,
                                         runsAfterwards: runs.current, wasCancelled: wasCancelled)
                        }
                        done.signal()
                    }
                }
            }
            expectSignal(done, "the timer scheduled next to the repetitions")
        }
        guard let stopped = stopped.current else { return }
        #expect(stopped.runsWhenReturned < 100, "the call returned only after \(stopped.runsWhenReturned) runs")
        #expect(stopped.wasCancelled)
        #expect(stopped.runsAfterwards == stopped.runsWhenCancelled, "runs went on after the cancel")
    }

    @Test("on Scheduler.none and on a Dispatch queue, unlimited immediate repetitions return to the caller and cancel() stops them")
    func unlimitedImmediateRepetitionsYieldOffLoops() {
        let queue = Scheduler(label: "test.repeat.queue")
        for scheduler in [Scheduler.none, queue] {
            let runs = AtomicCounter()
            // Called in a block of the queue the repetitions continue on (the background queue for
            // Scheduler.none), so that they wait for the call to return: the runs counted then are
            // those made inside the call.
            let host = scheduler == queue ? queue : Scheduler.background
            let (repeated, runsWhenReturned) = host.sync {
                let repeated = YieldingTests.failingAtOnce(counting: runs).onErrorRepeat(on: scheduler, maxRepetitions: Int.max)
                return (repeated, runs.current)
            }
            #expect(runsWhenReturned < 100, "on \(scheduler), the call returned only after \(runsWhenReturned) runs")
            // Let it repeat through the queue for a while: at least a few yields.
            while runs.current < 1_000 { sched_yield() }
            repeated.cancel()
            #expect(repeated.result?.error as? FutureError == .aborted)
            // Scheduler.none's repetitions continue on the background queue: wait for both queues.
            Scheduler.background.sync {}
            queue.sync {}
            let runsWhenSettled = runs.current
            Scheduler.background.sync {}
            queue.sync {}
            #expect(runs.current == runsWhenSettled, "on \(scheduler), runs went on after the cancel")
        }
    }

    @Test("a million immediate repetitions on a loop complete without overflowing the stack")
    func millionImmediateRepetitions() {
        let runs = AtomicCounter()
        let finished = DispatchSemaphore(value: 0)
        let failed = Guarded(false)
        withLoopOnOwnThread(name: "test.repeat.million") { loop in
            loop.execute {
                YieldingTests.failingAtOnce(counting: runs)
                    .onErrorRepeat(maxRepetitions: 1_000_000)
                    .onResult { result in
                        failed.withLock { $0 = result.error is Failure }
                        finished.signal()
                    }
            }
            // The generous bound: a million runs take seconds in a debug build, more under a sanitizer.
            #expect(finished.wait(timeout: .now() + reliabilityHangGuard) == .success, "a million repetitions")
        }
        #expect(runs.current == 1_000_001)
        #expect(failed.current)
    }

    @Test("a job re-scheduled with execute(after: 0) from its own callback lets work from another thread run, and the loop stop")
    func zeroDelayTimerLetsOtherWorkRun() {
        let loop = EventLoop.startOnNewThread(name: "test.zero-delay")
        let rearmer = Rearmer(loop)
        loop.execute { rearmer.fire() }
        // Spinning already: firings pile up only while nothing else is in the way.
        while rearmer.firings.current < 100 { sched_yield() }
        let ran = DispatchSemaphore(value: 0)
        loop.execute { ran.signal() }
        let result = ran.wait(timeout: .now() + hangGuard)
        #expect(result == .success, "a job submitted from another thread never ran")
        if result != .success { rearmer.stop() }  // lets the loop out, so that the test can end
        loop.shutdown()  // stops the loop while the timer is still being re-armed
        #expect(rearmer.firings.current >= 100)
    }
}

/// Re-schedules itself with no delay from its own callback until stopped.
private final class Rearmer: Sendable {
    let loop: EventLoop
    let firings = AtomicCounter()
    private let isStopped = Guarded(false)

    init(_ loop: EventLoop) { self.loop = loop }

    func fire() {
        firings.increment()
        guard !isStopped.current else { return }
        loop.execute(after: 0) { [self] in fire() }
    }

    func stop() { isStopped.withLock { $0 = true } }
}
