import Dispatch
import Flow
import FlowJobs
import FlowJobsPostgres
import FlowTestSupport
import FlowTesting
import Foundation
import Synchronization
import Testing

/// A store under test for the schedule cases, and a second instance on the same database where the
/// store has one (a file or a server, not SQLite in memory).
private struct ScheduleSubject {
    let wallClock = ManualWallClock()
    let directory = TemporaryDirectory()
    let store: any JobStore
    let other: any JobStore

    init(_ factory: JobStoreFactory) throws {
        store = try factory.open(wallClock.jobClock, directory)
        let clock = wallClock.jobClock
        if let postgres = store as? PostgresJobStore {
            other = try PostgresTestDatabase.openStore(clock: clock, schema: postgres.schema)
        } else if FileManager.default.fileExists(atPath: directory.path("jobs.sqlite")) {
            other = try SQLiteJobStore(path: directory.path("jobs.sqlite"), configuration: .init(clock: clock))
        } else {
            other = store
        }
    }

    var start: Date { ManualWallClock.start }

    /// The firing of the schedule `minutely` (every 60 s), with its timer's tick at `dueSecond` after the start.
    func firing(
        dueSecond: Int?, catchUp: JobSchedule.CatchUp = .latest, tickRetention: Duration = .seconds(86_400)
    ) throws -> ScheduleFiring {
        ScheduleFiring(
            name: "minutely", schedule: try JobSchedule.every(.seconds(60)),
            job: NewJob(name: "tick", queue: "default", payload: Data("{}".utf8), maxAttempts: 1),
            overlap: .runAlongside, catchUp: catchUp, dueTick: dueSecond.map { start.addingTimeInterval(Double($0)) },
            tickRetention: tickRetention)
    }

    /// The schedule's jobs, unfinished and finished, as seconds after the start of their ticks.
    func tickJobs() async throws -> [Int] {
        let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: "minutely")
        return try await store.jobs(state: nil, queue: nil, limit: 1000).get().compactMap { record in
            guard let key = record.uniqueKey, key.hasPrefix(prefix), let ms = Int64(key.dropFirst(prefix.count))
            else { return nil }
            return Int(ms / 1000 - Int64(start.timeIntervalSince1970))
        }.sorted()
    }

    /// The schedule's tick rows: (seconds after the start, outcome), in time order.
    func tickRows() async throws -> [String] {
        let start = Int64(start.timeIntervalSince1970) * 1000
        return try await store.transaction { transaction in
            try transaction.query(
                "SELECT fire_at, outcome FROM flow_schedule_ticks WHERE schedule = ? ORDER BY fire_at",
                [.text("minutely")]
            ).map { row -> String in
                guard case .integer(let fireAt) = row[0], case .text(let outcome) = row[1] else { return "?" }
                return "\((fireAt - start) / 1000) \(outcome)"
            }
        }.get()
    }
}

private func enqueuedIDs(_ result: ScheduleFiringResult) -> [JobID] {
    result.ticks.compactMap { if case .enqueued(let id) = $0.outcome { id } else { nil } }
}

@Suite("JobStore conformance: schedules")
struct JobStoreScheduleConformanceTests {
    @Test(arguments: JobStoreFactory.all)
    func aTickFiredTwiceEnqueuesOneJobAndTellsTheSecondCaller(_ factory: JobStoreFactory) async throws {
        let subject = try ScheduleSubject(factory)
        let created = try await subject.store.fireSchedule(subject.firing(dueSecond: nil)).get()
        #expect(created.ticks.isEmpty && created.state.lastFiredAt == nil)
        subject.wallClock.advance(by: 60)
        let first = try await subject.store.fireSchedule(subject.firing(dueSecond: 60)).get()
        let second = try await subject.other.fireSchedule(subject.firing(dueSecond: 60)).get()
        #expect(enqueuedIDs(first).count == 1)
        #expect(second.ticks == [ScheduleTick(fireTime: subject.start.addingTimeInterval(60), outcome: .alreadyFired)])
        #expect(try await subject.tickJobs() == [60])
    }

    @Test(arguments: JobStoreFactory.all)
    func firingsOfOneTickAtOnceFromTwoInstancesEnqueueOneJobAndFailNone(_ factory: JobStoreFactory) async throws {
        let subject = try ScheduleSubject(factory)
        _ = try await subject.store.fireSchedule(subject.firing(dueSecond: nil)).get()
        subject.wallClock.advance(by: 60)
        let firing = try subject.firing(dueSecond: 60)
        let stores = [subject.store, subject.other]
        // Eight firings in flight together, four on each instance: the store orders them, and only the
        // first enqueues; none fails on the tick's key.
        let results = try await withThrowingTaskGroup(of: ScheduleFiringResult.self) { group in
            for index in 0..<8 {
                let store = stores[index % 2]
                group.addTask { try await store.fireSchedule(firing).get() }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.flatMap(enqueuedIDs).count == 1)
        #expect(results.flatMap(\.ticks).filter { $0.outcome == .alreadyFired }.count == 7)
        #expect(try await subject.tickJobs() == [60])
    }

    @Test(arguments: JobStoreFactory.all)
    func aTicksRowOutlivesItsJobSoTheTickIsNeverEnqueuedAgain(_ factory: JobStoreFactory) async throws {
        let subject = try ScheduleSubject(factory)
        _ = try await subject.store.fireSchedule(subject.firing(dueSecond: nil)).get()
        subject.wallClock.advance(by: 60)
        _ = try await subject.store.fireSchedule(subject.firing(dueSecond: 60)).get()
        let claimed = try await subject.store.claim(
            ClaimRequest(
                slotsByQueue: ["default": 1], names: ["tick"], worker: "w", leaseDuration: .seconds(15),
                maxLeaseExpiries: 3)
        ).get().jobs
        let job = try #require(claimed.first)
        _ = try await subject.store.finish(JobLease(id: job.id, fence: job.fence), outcome: .completed, effects: nil)
            .get()
        // The job's unique key no longer stands in the way: only the tick's row does.
        let again = try await subject.other.fireSchedule(subject.firing(dueSecond: 60, catchUp: .all(limit: 10))).get()
        #expect(enqueuedIDs(again).isEmpty)
        #expect(try await subject.tickJobs() == [60])
        #expect(try await subject.tickRows() == ["60 enqueued"])
    }

    @Test(arguments: JobStoreFactory.all)
    func pausingAndResumingIsSeenByEveryInstanceOfTheStore(_ factory: JobStoreFactory) async throws {
        let subject = try ScheduleSubject(factory)
        _ = try await subject.store.fireSchedule(subject.firing(dueSecond: nil)).get()
        let paused = try await subject.other.setSchedulePaused(true, name: "minutely").get()
        #expect(paused?.isPaused == true)
        subject.wallClock.advance(by: 60)
        let whilePaused = try await subject.store.fireSchedule(subject.firing(dueSecond: 60)).get()
        #expect(whilePaused.ticks.isEmpty && whilePaused.state.isPaused)
        #expect(try await subject.store.schedules().get().map(\.isPaused) == [true])
        let resumed = try await subject.other.setSchedulePaused(false, name: "minutely").get()
        #expect(resumed?.isPaused == false)
        subject.wallClock.advance(by: 60)
        let afterResume = try await subject.store.fireSchedule(subject.firing(dueSecond: 120)).get()
        // The latest missed tick catches up: 60 was missed while paused, and 120 is the one due.
        #expect(try await subject.tickJobs() == [120])
        #expect(enqueuedIDs(afterResume).count == 1 && !afterResume.state.isPaused)
        #expect(try await subject.other.setSchedulePaused(true, name: "no-such-schedule").get() == nil)
    }

    @Test(arguments: JobStoreFactory.all)
    func theLastFiredTickIsReadBackByEveryInstance(_ factory: JobStoreFactory) async throws {
        let subject = try ScheduleSubject(factory)
        #expect(try await subject.other.schedules().get().isEmpty)
        _ = try await subject.store.fireSchedule(subject.firing(dueSecond: nil)).get()
        subject.wallClock.advance(by: 120)
        let fired = try await subject.store.fireSchedule(subject.firing(dueSecond: 120, catchUp: .all(limit: 5))).get()
        #expect(enqueuedIDs(fired).count == 2)
        let states = try await subject.other.schedules().get()
        let state = try #require(states.first)
        #expect(states.count == 1 && state.name == "minutely" && state.description == fired.state.description)
        #expect(state.lastFiredAt == subject.start.addingTimeInterval(120))
        #expect(state.nextFireAt == subject.start.addingTimeInterval(180))
        #expect(state.lastJobID == enqueuedIDs(fired).last && state.createdAt == subject.start)
        #expect(!state.isPaused && state.deferredTick == nil)
    }

    @Test(arguments: JobStoreFactory.all)
    func tickRowsOlderThanTheRetentionArePrunedAndTheirTicksStayFired(_ factory: JobStoreFactory) async throws {
        let subject = try ScheduleSubject(factory)
        _ = try await subject.store.fireSchedule(subject.firing(dueSecond: nil)).get()
        for second in stride(from: 60, through: 300, by: 60) {
            subject.wallClock.advance(by: 60)
            _ = try await subject.store.fireSchedule(subject.firing(dueSecond: second, tickRetention: .seconds(120)))
                .get()
        }
        #expect(try await subject.tickRows() == ["180 enqueued", "240 enqueued", "300 enqueued"])
        // A pruned tick is behind the last fired one: firing it again adds nothing.
        let again = try await subject.other.fireSchedule(subject.firing(dueSecond: 60, catchUp: .all(limit: 10))).get()
        #expect(enqueuedIDs(again).isEmpty)
        #expect(try await subject.tickJobs() == [60, 120, 180, 240, 300])
    }
}

@Suite("JobStore conformance: a worker's tick on the virtual clock")
struct JobStoreScheduleTimingConformanceTests {
    /// Every store answer takes `latency` of virtual time, as a round trip takes real time: a handler that
    /// waited for a round trip at its tick would start that much after it. The worker fires each tick
    /// early and claims its job ahead, so the handler starts at the tick's instant, never before it.
    @Test(arguments: JobStoreFactory.all)
    func aTicksHandlerStartsAtTheTicksInstantAndNothingRunsBeforeIt(_ factory: JobStoreFactory) throws {
        let subject = try TickingWorker(factory)
        for tick in [60, 120, 180] {
            // Up to a millisecond before the tick: its job is enqueued and claimed, and has not started.
            try subject.pump(through: .seconds(tick) - .milliseconds(1))
            #expect(subject.started.map(\.tick) == Array(stride(from: 60, to: tick, by: 60)))
            try subject.pump(through: .seconds(tick) + .milliseconds(10))
            #expect(subject.started.last?.tick == tick)
        }
        #expect(subject.started.map(\.tick) == [60, 120, 180])
        #expect(subject.startedOnTime, "started at \(subject.started.map(\.at))")
        try subject.close()
    }

    /// A paused schedule's early firing finds the tick not fired: the worker asks again at the tick's
    /// instant (not at once, and again until then), and once resumed the next tick is on time.
    @Test(arguments: JobStoreFactory.all)
    func aPausedScheduleIsAskedTwiceATickAndOnceResumedStartsOnTime(_ factory: JobStoreFactory) throws {
        let subject = try TickingWorker(factory)
        try subject.pump(through: .seconds(1))  // the start's firing made the schedule's row
        _ = try wait(subject.base.setSchedulePaused(true, name: "minutely"))
        let firingsBefore = subject.store.firings
        try subject.pump(through: .seconds(190))
        #expect(subject.started.isEmpty)
        // At 60 s - 20 ms and 60 s, 120 s - 20 ms and 120 s, 180 s - 20 ms and 180 s: not over and over
        // from the early firing until the tick.
        #expect(subject.store.firings - firingsBefore == 6)
        _ = try wait(subject.base.setSchedulePaused(false, name: "minutely"))
        try subject.pump(through: .seconds(240) + .milliseconds(10))
        #expect(subject.started.map(\.tick) == [240])
        #expect(subject.startedOnTime, "started at \(subject.started.map(\.at))")
        try subject.close()
    }
}

@Suite("Schedules: a due tick fired early")
struct ScheduleEarlyFiringTests {
    private let start = ManualWallClock.start  // a tick of every 60 s

    private func firing(dueTick: Date?) throws -> ScheduleFiring {
        ScheduleFiring(
            name: "minutely", schedule: try JobSchedule.every(.seconds(60)),
            job: NewJob(name: "tick", queue: "default", payload: Data("{}".utf8), maxAttempts: 1), overlap: .skip,
            catchUp: .all(limit: 3), dueTick: dueTick)
    }

    @Test func theDueTickFiresWithinTheAllowanceAsAtItsInstantAndItsJobWaitsForIt() throws {
        let tick = start.addingTimeInterval(60)
        let early = start.addingTimeInterval(59.98)
        var firing = try firing(dueTick: tick)
        #expect(firing.ticks(lastFired: start, now: early).isEmpty, "no allowance: not yet due")
        firing.earlyAllowance = .milliseconds(20)
        #expect(firing.ticks(lastFired: start, now: early) == [tick])
        #expect(firing.ticks(lastFired: start, now: start.addingTimeInterval(59.979)).isEmpty)
        // After a downtime the catch-up policy keeps the newest three ticks, the due one among them, as at
        // its instant.
        #expect(
            firing.ticks(lastFired: start.addingTimeInterval(-600), now: early)
                == [-60, 0, 60].map { start.addingTimeInterval($0) })
        #expect(firing.job(forTick: tick, now: early).runAt == tick)
        #expect(firing.job(forTick: start, now: early).runAt == nil, "a tick come already runs at once")
        #expect(firing.job(forTick: tick, now: early).uniqueKey == firing.job(forTick: tick).uniqueKey)
    }

    @Test func aFiringWithoutADueTickFiresNothingEarly() throws {
        var firing = try firing(dueTick: nil)
        firing.earlyAllowance = .milliseconds(20)
        #expect(
            firing.ticks(lastFired: start.addingTimeInterval(-600), now: start.addingTimeInterval(59.98))
                == [-120, -60, 0].map { start.addingTimeInterval($0) })
    }
}

/// A worker on the virtual clock over a ``SlowAnsweringStore`` (3 ms a round trip) of the store under
/// test, with the schedule `minutely` (every 60 s, skipping overlaps) and a handler that notes when it
/// started and for which tick.
private final class TickingWorker: Sendable {
    let jobs = VirtualJobs()
    let base: any JobStore
    let store: SlowAnsweringStore
    let worker: JobWorker
    /// (virtual time at the handler's start, the tick in seconds after the start its job was enqueued for)
    private let starts = Synchronization.Mutex<[(at: Duration, tick: Int)]>([])

    init(_ factory: JobStoreFactory) throws {
        base = try factory.open(jobs.jobClock, jobs.directory)
        store = SlowAnsweringStore(base: base, scheduler: jobs.scheduler, latency: .milliseconds(3))
        worker = JobWorker(
            store: store, scheduler: jobs.scheduler,
            configuration: .init(concurrencyByQueue: ["default": 1], identity: "on-time"))
        let kind = JobKind<String>(name: "tick", maxAttempts: 1)
        let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: "minutely")
        worker.register(kind) { [weak self] _, context in
            let milliseconds = Int64(context.record.uniqueKey?.dropFirst(prefix.count) ?? "") ?? 0
            let tick = Int(milliseconds / 1000 - Int64(ManualWallClock.start.timeIntervalSince1970))
            if let self { starts.withLock { $0.append((jobs.clock.now, tick)) } }
            return Future(())
        }
        try worker.schedule("minutely", .every(.seconds(60)), job: kind, payload: "hi", overlap: .skip)
        worker.start()
    }

    var started: [(at: Duration, tick: Int)] { starts.withLock { $0 } }

    /// Whether every handler started at its tick's instant: within the precision of a `Date` this far
    /// from 1970 (a fraction of a microsecond), through which the worker's timer reads the wall clock.
    /// A round trip at the tick would be the store's latency, milliseconds.
    var startedOnTime: Bool { started.allSatisfy { abs(($0.at - .seconds($0.tick)).seconds) < 1e-6 } }

    func pump(through time: Duration) throws { try store.pump(jobs, through: time) }

    /// Shuts the worker down and closes the store.
    func close() throws {
        let shutDown = worker.shutdown(gracePeriod: .zero)
        try pump(through: jobs.clock.now + .seconds(1))
        #expect(shutDown.result != nil)
        if let postgres = base as? PostgresJobStore { try wait(postgres.close()) }
        if let sqlite = base as? SQLiteJobStore { try wait(sqlite.close()) }
    }
}

/// A store whose every answer reaches the caller `latency` of virtual time after its request, and whose
/// notifications reach observers on the virtual scheduler, so that nothing a worker does depends on how
/// long the real store took. ``pump(_:through:)`` moves the clock only while no request is in the store.
private final class SlowAnsweringStore: JobStore {
    let base: any JobStore
    let scheduler: Scheduler
    let latency: Duration
    /// Requests the base store has not answered yet (with their barrier, below).
    private let inFlight = Synchronization.Mutex(0)
    private let firingCount = Synchronization.Mutex(0)

    /// How many times a schedule was fired through this store.
    var firings: Int { firingCount.withLock { $0 } }

    init(base: any JobStore, scheduler: Scheduler, latency: Duration) {
        self.base = base
        self.scheduler = scheduler
        self.latency = latency
    }

    /// Forwards a request. Once answered, a second, empty transaction runs through the base store before
    /// the answer is passed on: a store publishes a commit's notifications before it runs the next
    /// transaction, so they are on the scheduler by then, and ``pump(_:through:)`` sees them.
    private func forward<Value: Sendable>(_ request: () -> Future<Value>) -> Future<Value> {
        inFlight.withLock { $0 += 1 }
        let answer = request()
        return Future<Value>(on: .none) { [self] completion in
            answer.onResult(on: .none) { [self] result in
                base.transaction { _ in () }.onResult(on: .none) { [self] _ in
                    scheduler.async(after: latency.seconds) { completion(result) }
                    inFlight.withLock { $0 -= 1 }
                }
            }
            return Disposer {}
        }
    }

    /// Runs the virtual clock up to `time`, a due item at a time, each only once no request is in the
    /// base store (time stands still while the store works). Fails after the hang guard.
    func pump(_ jobs: VirtualJobs, through time: Duration) throws {
        let deadline = DispatchTime.now() + hangGuard
        while true {
            while inFlight.withLock({ $0 }) > 0 {
                guard DispatchTime.now() < deadline else {
                    Issue.record("timed out waiting for the store")
                    throw WaitTimedOut()
                }
                _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(1))
            }
            guard let next = jobs.clock.nextDueTime, next <= time else { break }
            jobs.clock.advance(to: next)
        }
        jobs.clock.advance(to: time)
    }

    var clock: JobClock { base.clock }
    func enqueue(_ jobs: [NewJob]) -> Future<[EnqueuedJob]> { forward { base.enqueue(jobs) } }
    func claim(_ request: ClaimRequest) -> Future<ClaimResult> { forward { base.claim(request) } }
    func heartbeat(_ lease: JobLease, leaseDuration: Duration) -> Future<HeartbeatResult> {
        forward { base.heartbeat(lease, leaseDuration: leaseDuration) }
    }
    func finish(
        _ lease: JobLease, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) -> Future<JobRecord> { forward { base.finish(lease, outcome: outcome, effects: effects) } }
    func release(_ lease: JobLease) -> Future<Void> { forward { base.release(lease) } }
    func recordFirstAttemptTrace(_ lease: JobLease, traceContext: [String: String]) -> Future<Void> {
        forward { base.recordFirstAttemptTrace(lease, traceContext: traceContext) }
    }
    func setConcurrencyLimit(_ maxRunning: Int?, forQueue queue: String) -> Future<Void> {
        forward { base.setConcurrencyLimit(maxRunning, forQueue: queue) }
    }
    func cancel(_ id: JobID) -> Future<JobCancellation> { forward { base.cancel(id) } }
    func job(_ id: JobID) -> Future<JobRecord?> { forward { base.job(id) } }
    func jobs(state: JobState?, queue: String?, limit: Int) -> Future<[JobRecord]> {
        forward { base.jobs(state: state, queue: queue, limit: limit) }
    }
    func transaction<Value: Sendable>(
        _ body: @escaping @Sendable (any JobTransaction) throws -> Value
    ) -> Future<Value> { forward { base.transaction(body) } }
    func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable {
        let scheduler = scheduler
        return base.observe { notification in scheduler.async { observer(notification) } }
    }
    func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> {
        firingCount.withLock { $0 += 1 }
        return forward { base.fireSchedule(firing) }
    }
    func schedules() -> Future<[ScheduleState]> { forward { base.schedules() } }
    func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?> {
        forward { base.setSchedulePaused(isPaused, name: name) }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
