import Flow

/// A repeating timer: arms one one-shot timer at a time on its scheduler, at the absolute due time its
/// ``PeriodicSchedule`` computes, and re-arms it after each tick's work.
final class RepeatingTimer: Disposable {
    private struct State {
        var schedule: PeriodicSchedule
        /// The tick's work, until the timer is disposed: work often holds the timer's own disposable
        /// (to stop it from a tick), so a disposed timer lets go of its work, or the two would keep
        /// each other alive.
        var work: (@Sendable (TimerTick) -> Void)?
        var isDisposed = false
        var firedCount = 0
        /// The one-shot timer armed for the next tick, with the `firedCount` at which it was armed: a
        /// stale arming (its tick fired before it was stored) must not overwrite a newer one.
        var armed: (timer: Disposable, generation: Int)?
    }

    // Guarded by the mutex; the work and the scheduler's timer calls run outside it.
    private let state: Locked<State>
    private let scheduler: Scheduler

    init(scheduler: Scheduler, schedule: PeriodicSchedule, work: @escaping @Sendable (TimerTick) -> Void) {
        self.scheduler = scheduler
        state = Locked(State(schedule: schedule, work: work))
    }

    func start() {
        let dueTime = state.withLock { $0.schedule.dueTime }
        arm(at: dueTime, generation: 0)
    }

    /// Stops the timer: no tick starts once this has returned.
    func dispose() {
        let (armed, work) = state.withLock { state in
            state.isDisposed = true
            let taken = (state.armed, state.work)
            state.armed = nil
            state.work = nil
            return taken
        }
        armed?.timer.dispose()
        // Released outside the lock: the work's captures may run deinitialisers.
        _ = work
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
        let due = state.withLock { state -> (tick: TimerTick, work: @Sendable (TimerTick) -> Void)? in
            guard !state.isDisposed, let work = state.work else { return nil }
            state.firedCount += 1
            state.armed = nil
            let tick = TimerTick(
                number: state.firedCount, dueUptimeNanoseconds: state.schedule.dueTime,
                skippedCount: state.schedule.skippedCount)
            return (tick, work)
        }
        guard let due else { return }
        due.work(due.tick)
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
