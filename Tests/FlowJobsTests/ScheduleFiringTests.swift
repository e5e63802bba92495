import Flow
import FlowJobs
import Foundation
import Synchronization
import Testing

private struct Tick: Codable, Sendable {
    var note: String
}

private let tickJob = JobKind<Tick>(name: "tick", maxAttempts: 1)

/// Every 60 s from 1970: `ManualWallClock.start` is one of its ticks, so the first tick is 60 s in.
private let everyMinute = try! JobSchedule.every(.seconds(60))

/// The schedule's jobs in the store, as (tick in seconds after `ManualWallClock.start`, job) pairs, in
/// job order.
private func scheduledJobs(
    _ store: SQLiteJobStore, schedule: String = "minutely"
) throws -> [(tick: Int, job: JobRecord)] {
    let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: schedule)
    return try completed(store.jobs(state: nil, queue: nil, limit: 10_000)).compactMap { record in
        guard let key = record.uniqueKey, key.hasPrefix(prefix), let milliseconds = Int64(key.dropFirst(prefix.count))
        else { return nil }
        let seconds = Double(milliseconds) / 1000 - ManualWallClock.start.timeIntervalSince1970
        return (Int(seconds), record)
    }
}

/// The tick rows the store keeps: (tick in seconds after the start, outcome).
private func tickRows(_ store: SQLiteJobStore, schedule: String = "minutely") throws -> [(tick: Int, outcome: String)] {
    let start = Int64(ManualWallClock.start.timeIntervalSince1970 * 1000)
    let rows = try completed(store.transaction { transaction in
        try transaction.query(
            "SELECT fire_at, outcome FROM flow_schedule_ticks WHERE schedule = ? ORDER BY fire_at",
            [.text(schedule)])
    })
    return rows.map { row in
        guard case .integer(let fireAt) = row[0], case .text(let outcome) = row[1] else { return (-1, "?") }
        return (Int((fireAt - start) / 1000), outcome)
    }
}

private func worker(
    _ store: any JobStore, _ jobs: VirtualJobs, identity: String, overlap: JobSchedule.Overlap = .runAlongside,
    catchUp: JobSchedule.CatchUp = .latest, handler: (@Sendable (Tick, JobContext) -> Future<Void>)? = nil
) throws -> JobWorker {
    let worker = JobWorker(
        store: store, scheduler: jobs.scheduler,
        configuration: .init(concurrencyByQueue: ["default": 10], identity: identity))
    if let handler { worker.register(tickJob, handler: handler) }
    try worker.schedule(
        "minutely", everyMinute, job: tickJob, payload: Tick(note: "hi"), overlap: overlap, catchUp: catchUp)
    return worker
}

/// Shuts `worker` down, moving time past its grace period.
private func stop(_ worker: JobWorker, _ jobs: VirtualJobs) throws {
    let stopped = worker.shutdown(gracePeriod: .seconds(1))
    jobs.advance(by: .seconds(2))
    try completed(stopped)
}

@Suite("Schedules fired by workers: one job per tick, overlap, catch-up, crashes, pauses, clock steps")
struct ScheduleFiringTests {
    @Test func twoWorkersOnTwoConnectionsEnqueueEachTickOnce() throws {
        let jobs = VirtualJobs()
        let first = try jobs.openStore()
        let second = try jobs.openStore()
        let workers = try [worker(first, jobs, identity: "a"), worker(second, jobs, identity: "b")]
        workers.forEach { $0.start() }
        jobs.advance(by: .seconds(600))
        let fired = try scheduledJobs(first)
        #expect(fired.map(\.tick) == Array(stride(from: 60, through: 600, by: 60)))
        #expect(try tickRows(first).allSatisfy { $0.outcome == "enqueued" })
        for worker in workers { try stop(worker, jobs) }
    }

    @Test func aTickIsNotEnqueuedAgainAfterItsJobFinished() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let runner = try worker(store, jobs, identity: "runner") { _, _ in Future(()) }
        runner.start()
        jobs.advance(by: .seconds(60))
        let first = try scheduledJobs(store)
        #expect(first.map(\.tick) == [60])
        #expect(first.first?.job.state == .completed)
        // A late scheduler (another process, say) tries the same, finished tick: nothing is added.
        var firing = ScheduleFiring(
            name: "minutely", schedule: everyMinute, job: try tickJob.newJob(Tick(note: "late"), clock: store.clock),
            overlap: .runAlongside, catchUp: .all(limit: 5))
        firing.dueTick = ManualWallClock.start.addingTimeInterval(60)
        let late = try completed(store.fireSchedule(firing))
        let firstTick = ManualWallClock.start.addingTimeInterval(60)
        #expect(late.ticks == [ScheduleTick(fireTime: firstTick, outcome: .alreadyFired)])
        #expect(try scheduledJobs(store).count == 1)
        try stop(runner, jobs)
    }

    @Test func skipLeavesNoJobForTicksWhileThePreviousRuns() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let pending = PendingWork()
        let runner = try worker(store, jobs, identity: "skip", overlap: .skip) { _, _ in pending.future() }
        runner.start()
        jobs.advance(by: .seconds(240))
        #expect(try scheduledJobs(store).map(\.tick) == [60])
        #expect(try tickRows(store).map(\.outcome) == ["enqueued", "skipped", "skipped", "skipped"])
        pending.completeAll()
        jobs.clock.advance(by: .zero)
        jobs.advance(by: .seconds(60))
        #expect(try scheduledJobs(store).map(\.tick) == [60, 300])
        pending.completeAll()
        try stop(runner, jobs)
    }

    @Test func queueOneEnqueuesTheFirstWaitingTickWhenThePreviousFinishes() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let pending = PendingWork()
        let events = EventLog()
        let runner = JobWorker(
            store: store, scheduler: jobs.scheduler,
            configuration: .init(concurrencyByQueue: ["default": 10], identity: "queue", onEvent: events.onEvent))
        runner.register(tickJob) { _, _ in pending.future() }
        try runner.schedule("minutely", everyMinute, job: tickJob, payload: Tick(note: "q"), overlap: .queueOne)
        runner.start()
        jobs.advance(by: .seconds(240))
        #expect(try scheduledJobs(store).map(\.tick) == [60])
        #expect(try tickRows(store).map(\.outcome) == ["enqueued", "deferred", "skipped", "skipped"])
        #expect(events.started.count == 1)
        jobs.clock.advance(by: .milliseconds(500))
        pending.completeAll()
        jobs.clock.advance(by: .zero)
        // The waiting tick (120) is enqueued and started at the finish, not at the next tick.
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120])
        #expect(events.started.count == 2)
        #expect(try tickRows(store).map(\.outcome) == ["enqueued", "enqueued", "skipped", "skipped"])
        pending.completeAll()
        jobs.clock.advance(by: .zero)
        jobs.advance(by: .seconds(60))
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120, 300])
        pending.completeAll()
        try stop(runner, jobs)
    }

    @Test func runAlongsideStartsEachTicksJobBesideThePrevious() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let pending = PendingWork()
        let runner = try worker(store, jobs, identity: "along", overlap: .runAlongside) { _, _ in pending.future() }
        runner.start()
        jobs.advance(by: .seconds(240))
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120, 180, 240])
        #expect(runner.runningCount == 4)
        pending.completeAll()
        try stop(runner, jobs)
    }

    /// Downtime over `missed` ticks (the worker stops after the tick at 60 s and the next starts just after
    /// the tick at 60 + 60 × missed) under each policy: the ticks that fire at the restart, and after it.
    @Test(arguments: [1, 5, 500])
    func restartsCatchUpAsThePolicySays(missed: Int) throws {
        let policies: [(JobSchedule.CatchUp, (Int) -> [Int])] = [
            (.none, { _ in [] }),
            (.latest, { last in [last] }),
            (.all(limit: 10), { last in Array(stride(from: max(120, last - 540), through: last, by: 60)) }),
        ]
        for (policy, expected) in policies {
            let jobs = VirtualJobs()
            let store = try jobs.openStore()
            let before = try worker(store, jobs, identity: "before", catchUp: policy)
            before.start()
            jobs.advance(by: .seconds(90))
            try completed(before.shutdown(gracePeriod: .seconds(1)))
            let lastMissed = 60 + 60 * missed
            jobs.advance(by: .seconds(Int64(lastMissed - 90 + 1)), step: .seconds(3600))
            let after = try worker(store, jobs, identity: "after", catchUp: policy)
            after.start()
            let caughtUp = try scheduledJobs(store).map(\.tick)
            #expect(caughtUp == [60] + expected(lastMissed), "catch-up \(policy) over \(missed) missed ticks")
            jobs.advance(by: .seconds(120))
            #expect(
                try scheduledJobs(store).map(\.tick) == caughtUp + [lastMissed + 60, lastMissed + 120],
                "ticks after the restart under \(policy)")
            try stop(after, jobs)
        }
    }

    enum EnqueueCrash: CaseIterable, Sendable {
        case beforeTheTickCommits, afterTheTickCommits
    }

    @Test(arguments: EnqueueCrash.allCases)
    func aWorkerKilledDuringATicksEnqueueFiresItExactlyOnce(_ crash: EnqueueCrash) throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let target = ManualWallClock.start.addingTimeInterval(120)
        let crashable = CrashableStore(base: store) { call, _ in
            guard case .fireSchedule(let firing) = call, firing.dueTick == target else { return .forward }
            return crash == .beforeTheTickCommits ? .crashBefore : .crashAfterCommit
        }
        let first = try worker(crashable, jobs, identity: "first", catchUp: .latest)
        crashable.whenCrashing { first.simulateCrash() }
        first.start()
        jobs.advance(by: .seconds(150))
        #expect(crashable.hasCrashed)
        let expectedAtCrash = crash == .beforeTheTickCommits ? [60] : [60, 120]
        #expect(try scheduledJobs(store).map(\.tick) == expectedAtCrash)

        // The process comes back 10 s later, with its memory gone, on a reopened store.
        jobs.advance(by: .seconds(10))
        let reopened = try jobs.openStore()
        let second = try worker(reopened, jobs, identity: "second", catchUp: .latest)
        second.start()
        jobs.advance(by: .seconds(140))
        #expect(try scheduledJobs(reopened).map(\.tick) == [60, 120, 180, 240, 300])
        try stop(second, jobs)
    }

    @Test func pausingStopsFiringAndResumingCatchesUpWithinTheLimit() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let runner = try worker(store, jobs, identity: "pause", catchUp: .all(limit: 3))
        runner.start()
        jobs.advance(by: .seconds(130))
        let paused = try completed(store.setSchedulePaused(true, name: "minutely"))
        #expect(paused?.isPaused == true)
        jobs.advance(by: .seconds(600))
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120])
        #expect(try completed(store.schedules()).first?.isPaused == true)

        _ = try completed(store.setSchedulePaused(false, name: "minutely"))
        // At its next tick (780) it catches up: at most three ticks in all, the newest.
        jobs.advance(by: .seconds(60))
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120, 660, 720, 780])
        jobs.advance(by: .seconds(60))
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120, 660, 720, 780, 840])
        #expect(try completed(store.setSchedulePaused(true, name: "no-such-schedule")) == nil)
        try stop(runner, jobs)
    }

    @Test func aWallClockSteppingBackwardsFiresNoTickTwice() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let runner = try worker(store, jobs, identity: "back")
        runner.start()
        jobs.advance(by: .seconds(90))
        jobs.stepWallClock(by: -120)  // the wall clock now reads -30 s
        jobs.advance(by: .seconds(300))  // through wall clock 270 s
        let ticks = try scheduledJobs(store).map(\.tick)
        #expect(ticks == [60, 120, 180, 240])
        try stop(runner, jobs)
    }

    @Test func aWallClockSteppingForwardsCatchesUpWithoutAStorm() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let runner = try worker(store, jobs, identity: "forward", catchUp: .latest)
        runner.start()
        jobs.advance(by: .seconds(90))
        jobs.stepWallClock(by: 3600)
        jobs.advance(by: .seconds(30))  // the timer armed for 120 fires; the wall clock reads 3720
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120, 3720])
        jobs.advance(by: .seconds(60))
        #expect(try scheduledJobs(store).map(\.tick) == [60, 120, 3720, 3780])
        try stop(runner, jobs)
    }

    @Test func theStoreKeepsTheScheduleStateForTheTool() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let runner = try worker(store, jobs, identity: "state")
        runner.start()
        jobs.advance(by: .seconds(130))
        let state = try #require(try completed(store.schedules()).first)
        #expect(state.name == "minutely")
        #expect(state.description == "every 60 s")
        #expect(state.lastFiredAt == ManualWallClock.start.addingTimeInterval(120))
        #expect(state.nextFireAt == ManualWallClock.start.addingTimeInterval(180))
        #expect(state.isPaused == false)
        #expect(runner.scheduleNames == ["minutely"])
        try stop(runner, jobs)
    }

    @Test func tickRecordsArePrunedBehindTheRetention() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let runner = try worker(store, jobs, identity: "prune")
        runner.start()
        jobs.advance(by: .seconds(86_400 + 600), step: .seconds(60))
        let rows = try tickRows(store)
        #expect(rows.first?.tick == 600)
        #expect(rows.last?.tick == 87_000)
        try stop(runner, jobs)
    }

    @Test func declaringAScheduleAfterStartStopsTheProgramWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = JobWorker(store: try SQLiteJobStore.inMemory(), scheduler: .none)
            worker.start()
            try worker.schedule("late", try JobSchedule.every(.seconds(60)), job: tickJob, payload: Tick(note: ""))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("JobWorker.schedule(late): declare schedules before start()"), "\(message)")
    }

    @Test func declaringTwoSchedulesWithOneNameStopsTheProgramWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = JobWorker(store: try SQLiteJobStore.inMemory(), scheduler: .none)
            let schedule = try JobSchedule.every(.seconds(60))
            try worker.schedule("twice", schedule, job: tickJob, payload: Tick(note: ""))
            try worker.schedule("twice", schedule, job: tickJob, payload: Tick(note: ""))
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a schedule named twice is declared already"), "\(message)")
    }

    @Test func aVersion3DatabaseGainsTheScheduleTablesAndLaterMigrationsOnOpen() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        try completed(store.transaction { transaction in
            try transaction.execute("DROP TABLE flow_schedules", [])
            try transaction.execute("DROP TABLE flow_schedule_ticks", [])
            try transaction.execute("ALTER TABLE flow_jobs DROP COLUMN timeout_ms", [])
            try transaction.execute("PRAGMA user_version = 3", [])
        })
        try completed(store.close())
        let reopened = try jobs.openStore()
        let version = try completed(reopened.transaction { try $0.query("PRAGMA user_version", []) })
        #expect(version.first?.first == .integer(6))
        let runner = try worker(reopened, jobs, identity: "migrated")
        runner.start()
        jobs.advance(by: .seconds(60))
        #expect(try scheduledJobs(reopened).map(\.tick) == [60])
        try stop(runner, jobs)
    }

    @Test func aStoreWithoutSchedulesFailsWithATypedError() throws {
        let jobs = VirtualJobs()
        let store = NoSchedulesStore(base: try jobs.openStore())
        let events = EventLog()
        let runner = JobWorker(
            store: store, scheduler: jobs.scheduler, configuration: .init(identity: "plain", onEvent: events.onEvent))
        try runner.schedule("minutely", everyMinute, job: tickJob, payload: Tick(note: "no"))
        runner.start()
        jobs.advance(by: .seconds(120))
        let failures = events.all.compactMap { if case .storeFailed(let message) = $0 { message } else { nil } }
        #expect(failures == ["firing the schedule minutely: this store (NoSchedulesStore) does not support schedules"])
        #expect {
            try completed(store.schedules())
        } throws: { error in
            error as? ScheduleStoreError == .unsupported(store: "NoSchedulesStore")
        }
        try stop(runner, jobs)
    }
}

/// A store that implements only the protocol's original requirements, as a store written before schedules
/// does: the schedule requirements come from the protocol's defaults.
private final class NoSchedulesStore: JobStore {
    let base: SQLiteJobStore

    init(base: SQLiteJobStore) { self.base = base }

    var clock: JobClock { base.clock }
    func enqueue(_ jobs: [NewJob]) -> Future<[EnqueuedJob]> { base.enqueue(jobs) }
    func claim(_ request: ClaimRequest) -> Future<ClaimResult> { base.claim(request) }
    func heartbeat(_ lease: JobLease, leaseDuration: Duration) -> Future<HeartbeatResult> {
        base.heartbeat(lease, leaseDuration: leaseDuration)
    }
    func finish(
        _ lease: JobLease, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) -> Future<JobRecord> { base.finish(lease, outcome: outcome, effects: effects) }
    func release(_ lease: JobLease) -> Future<Void> { base.release(lease) }
    func setConcurrencyLimit(_ maxRunning: Int?, forQueue queue: String) -> Future<Void> {
        base.setConcurrencyLimit(maxRunning, forQueue: queue)
    }
    func cancel(_ id: JobID) -> Future<JobCancellation> { base.cancel(id) }
    func job(_ id: JobID) -> Future<JobRecord?> { base.job(id) }
    func jobs(state: JobState?, queue: String?, limit: Int) -> Future<[JobRecord]> {
        base.jobs(state: state, queue: queue, limit: limit)
    }
    func transaction<Value: Sendable>(
        _ body: @escaping @Sendable (any JobTransaction) throws -> Value
    ) -> Future<Value> { base.transaction(body) }
    func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable {
        base.observe(observer)
    }
}
