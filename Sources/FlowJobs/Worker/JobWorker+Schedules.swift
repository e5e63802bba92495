import Flow
import Foundation

/// The schedules declared on a worker, and the one timer each has armed for its next tick.
final class JobWorkerSchedules: Sendable {
    struct Declared {
        var firing: ScheduleFiring
        var timer: Disposable?
    }

    struct State {
        var declared: [String: Declared] = [:]
        var isStarted = false
        var isStopped = false
        var observation: Disposable?
    }

    let state = Locked(State())

    /// Takes every timer and the store observation out, and marks the schedules stopped.
    func stop() -> [Disposable] {
        state.withLock { state in
            state.isStopped = true
            var disposables = state.declared.values.compactMap(\.timer)
            if let observation = state.observation { disposables.append(observation) }
            for name in state.declared.keys { state.declared[name]?.timer = nil }
            state.observation = nil
            return disposables
        }
    }

    deinit {
        for disposable in stop() { disposable.dispose() }
    }
}

extension JobWorker {
    /// Declares a schedule: from ``start()`` on, each of its ticks enqueues one job of `kind` with
    /// `payload`, exactly once across every worker and process of the store.
    ///
    /// ```swift
    /// let nightly = try JobSchedule(cron: "0 3 * * *", timeZone: "Europe/Stockholm")
    /// try worker.schedule("nightly-report", nightly, job: buildReport, payload: Report(), overlap: .skip)
    /// worker.start()
    /// ```
    ///
    /// - The next tick is a timer on the worker's scheduler: nothing polls. Shortly before the tick (the
    ///   worker's claim lookahead, milliseconds) the worker asks the store to fire it
    ///   (``JobStore/fireSchedule(_:)``, with ``ScheduleFiring/earlyAllowance``); the store records the tick
    ///   with its job, to run at the tick's instant, in one transaction, so a second worker trying the same
    ///   tick adds nothing. A worker claims the job ahead and starts it at the tick. The overlap policy
    ///   looks at the previous tick's job at that firing, and a pause after it no longer holds the tick back.
    /// - At ``start()``, ticks missed while no worker ran (counted from the last tick the store fired) fire
    ///   as `catchUp` says; a paused schedule fires nothing, and once resumed its next tick catches up on the
    ///   ticks missed meanwhile, again as `catchUp` says (at most `limit` of them for
    ///   ``JobSchedule/CatchUp/all(limit:)``).
    /// - The wall clock stepping backwards delays the next tick until the clock reads it (nothing fires
    ///   twice: a tick fires only after the last fired one); stepping forwards makes the ticks it jumped over
    ///   missed ticks, which `catchUp` bounds.
    ///
    /// Declare schedules before ``start()``; the worker need not run `kind`'s jobs itself.
    ///
    /// - Parameters:
    ///   - name: the schedule's name in the store: the same name in every process means the same schedule.
    ///   - schedule: when it fires.
    ///   - kind: the job each tick enqueues, in the kind's queue with its priority and attempts.
    ///   - payload: the job's payload.
    ///   - overlap: what a tick does while the previous tick's job is unfinished; skip by default.
    ///   - catchUp: which missed ticks still fire; the latest one by default.
    /// - Throws: the payload's encoding error.
    public func schedule<Payload>(
        _ name: String, _ schedule: JobSchedule, job kind: JobKind<Payload>, payload: Payload,
        overlap: JobSchedule.Overlap = .skip, catchUp: JobSchedule.CatchUp = .latest
    ) throws {
        let job = try kind.newJob(payload, clock: store.clock)
        let firing = ScheduleFiring(name: name, schedule: schedule, job: job, overlap: overlap, catchUp: catchUp)
        declaredSchedules.state.withLock { state in
            misusePrecondition(!state.isStarted, "JobWorker.schedule(\(name)): declare schedules before start()")
            misusePrecondition(
                state.declared[name] == nil, "JobWorker.schedule: a schedule named \(name) is declared already")
            state.declared[name] = JobWorkerSchedules.Declared(firing: firing, timer: nil)
        }
    }

    /// The names of the schedules declared on this worker, sorted.
    public var scheduleNames: [String] { declaredSchedules.state.withLock { $0.declared.keys.sorted() } }

    /// Starts the declared schedules: each catches up on missed ticks, then arms its next tick.
    func startSchedules() {
        let names = declaredSchedules.state.withLock { state -> [String] in
            state.isStarted = true
            return state.isStopped ? [] : state.declared.keys.sorted()
        }
        guard !names.isEmpty else { return }
        let observation = store.observe { [weak self] notification in
            if case .finished(let record) = notification { self?.scheduledJobFinished(record) }
        }
        let isStopped = declaredSchedules.state.withLock { state in
            if !state.isStopped { state.observation = observation }
            return state.isStopped
        }
        if isStopped {
            observation.dispose()
            return
        }
        for name in names { fireSchedule(name, dueTick: nil) }
    }

    /// Disarms every schedule's timer; nothing more fires from this worker.
    func stopSchedules() {
        for disposable in declaredSchedules.stop() { disposable.dispose() }
    }

    /// A job of a schedule that queues one tick finished: the waiting tick, if any, is enqueued now.
    private func scheduledJobFinished(_ record: JobRecord) {
        guard let key = record.uniqueKey, key.hasPrefix("flow.schedule/") else { return }
        let name = declaredSchedules.state.withLock { state in
            state.declared.first { name, declared in
                let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: name)
                return declared.firing.overlap == .queueOne && key.hasPrefix(prefix)
                    && !key.dropFirst(prefix.count).contains("/")
            }?.key
        }
        if let name { fireSchedule(name, dueTick: nil) }
    }

    private func fireSchedule(_ name: String, dueTick: Date?) {
        guard var firing = declaredSchedules.state.withLock({ $0.isStopped ? nil : $0.declared[name]?.firing })
        else { return }
        firing.dueTick = dueTick
        // The timer fires the due tick the claim lookahead early, and the store enqueues its job to run at
        // the tick: this worker's claim takes it ahead and starts it from a timer at the tick, with no
        // round trip to the store left at the tick's instant.
        firing.earlyAllowance = Self.claimLookahead
        store.fireSchedule(firing).onResult(on: scheduler) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let fired):
                guard let next = fired.state.nextFireAt else { return }
                let early = next.addingTimeInterval(-Self.claimLookahead.seconds)
                // The due tick is still next when the store did not fire it (a paused schedule, or a
                // wall clock stepped back): asked again at the tick itself, not at once and again until then.
                if next == dueTick && early <= store.clock.now() {
                    armSchedule(name, at: next, dueTick: next)
                } else {
                    armSchedule(name, at: early, dueTick: next)
                }
            case .failure(let error):
                configuration.onEvent?(.storeFailed("firing the schedule \(name): \(error)"))
                // A closed store or one without schedules answers nothing more; any other failure may pass.
                if case JobStoreError.closed = error { return }
                if error is ScheduleStoreError { return }
                armSchedule(name, at: store.clock.now().addingTimeInterval(1), dueTick: dueTick)
            }
        }
    }

    /// Arms the schedule's one timer for `time`, replacing the one armed before.
    private func armSchedule(_ name: String, at time: Date, dueTick: Date?) {
        // A loop's timer fires at or after its deadline; one that fires before the wall clock reads the tick
        // (a clock stepped back meanwhile) finds it not yet due, and the store's answer arms it again.
        let delay = max(0, time.timeIntervalSince(store.clock.now()))
        let timer = scheduler.async(after: delay) { [weak self] in self?.fireSchedule(name, dueTick: dueTick) }
        let replaced = declaredSchedules.state.withLock { state -> Disposable? in
            guard !state.isStopped, state.declared[name] != nil else { return timer }
            defer { state.declared[name]?.timer = timer }
            return state.declared[name]?.timer
        }
        replaced?.dispose()
    }
}
