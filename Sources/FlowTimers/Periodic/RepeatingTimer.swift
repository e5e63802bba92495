import Flow
import Synchronization

/// A repeating timer: arms one one-shot timer at a time on its scheduler, at the absolute due time its
/// ``PeriodicSchedule`` computes, and re-arms it after each tick's work.
final class RepeatingTimer: Disposable {
    private struct State {
        var schedule: PeriodicSchedule
        var isDisposed = false
        var firedCount = 0
        /// The one-shot timer armed for the next tick, with the `firedCount` at which it was armed: a
        /// stale arming (its tick fired before it was stored) must not overwrite a newer one.
        var armed: (timer: Disposable, generation: Int)?
    }

    // Guarded by the mutex; the work and the scheduler's timer calls run outside it.
    private let state: Mutex<State>
    private let scheduler: Scheduler
    private let work: @Sendable (TimerTick) -> Void

    init(scheduler: Scheduler, schedule: PeriodicSchedule, work: @escaping @Sendable (TimerTick) -> Void) {
        self.scheduler = scheduler
        self.work = work
        state = Mutex(State(schedule: schedule))
    }

    func start() {
        let dueTime = state.withLock { $0.schedule.dueTime }
        arm(at: dueTime, generation: 0)
    }

    /// Stops the timer: no tick starts once this has returned.
    func dispose() {
        let armed = state.withLock { state in
            state.isDisposed = true
            let taken = state.armed
            state.armed = nil
            return taken
        }
        armed?.timer.dispose()
    }

    private func arm(at dueTime: UInt64, generation: Int) {
        let timer: Disposable
        if let loop = scheduler.eventLoop {
            // An absolute deadline: the loop's heap entry is due exactly at the schedule's time.
            timer = loop.execute(atUptimeNanoseconds: dueTime) { [self] in fire() }
        } else {
            // Other backends take a delay; it is recomputed from the absolute due time for every tick,
            // so the time spent here never accumulates into drift.
            timer = scheduler.async(after: scheduler.secondsUntil(dueTime)) { [self] in fire() }
        }
        let isStale = state.withLock { state -> Bool in
            guard !state.isDisposed else { return true }
            if state.firedCount == generation {
                state.armed = (timer, generation)
            }
            return false
        }
        if isStale { timer.dispose() }
    }

    private func fire() {
        let tick = state.withLock { state -> TimerTick? in
            guard !state.isDisposed else { return nil }
            state.firedCount += 1
            state.armed = nil
            return TimerTick(
                number: state.firedCount, dueUptimeNanoseconds: state.schedule.dueTime,
                skippedCount: state.schedule.skippedCount)
        }
        guard let tick else { return }
        work(tick)
        let now = scheduler.uptimeNanoseconds
        let next = state.withLock { state -> (dueTime: UInt64, generation: Int)? in
            guard !state.isDisposed else { return nil }
            return (state.schedule.advance(now: now), state.firedCount)
        }
        if let next {
            arm(at: next.dueTime, generation: next.generation)
        }
    }
}
