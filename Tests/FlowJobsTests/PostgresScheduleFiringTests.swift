import Flow
import FlowJobs
import FlowJobsPostgres
import Foundation
import Synchronization
import Testing

/// Two stores on one schema of the real server, on one manual wall clock, and the schedule `minutely`
/// (every 60 s) that both fire.
private struct TwoSchedulers {
    let wallClock = ManualWallClock()
    let first: PostgresJobStore
    let second: PostgresJobStore

    init() throws {
        let schema = PostgresTestDatabase.freshSchema()
        first = try PostgresTestDatabase.openStore(clock: wallClock.jobClock, schema: schema)
        second = try PostgresTestDatabase.openStore(clock: wallClock.jobClock, schema: schema)
    }

    func close() {
        first.close()
        second.close()
    }

    /// The firing of `minutely` with its timer's tick at `dueSecond` after the start.
    func firing(dueSecond: Int?, overlap: JobSchedule.Overlap = .runAlongside) throws -> ScheduleFiring {
        ScheduleFiring(
            name: "minutely", schedule: try JobSchedule.every(.seconds(60)),
            job: NewJob(name: "tick", queue: "reports", payload: Data("{}".utf8), priority: 3, maxAttempts: 2),
            overlap: overlap, catchUp: .latest,
            dueTick: dueSecond.map { ManualWallClock.start.addingTimeInterval(Double($0)) })
    }

    /// Moves the clock to `second` after the start.
    func advance(toSecond second: Int) {
        let now = first.clock.now()
        wallClock.advance(by: ManualWallClock.start.addingTimeInterval(Double(second)).timeIntervalSince(now))
    }

    /// The schedule's tick rows: "<seconds after the start> <outcome> <has a job>", in time order.
    func tickRows() throws -> [String] {
        let start = Int64(ManualWallClock.start.timeIntervalSince1970) * 1000
        return try wait(
            first.transaction { transaction in
                try transaction.query(
                    "SELECT fire_at, outcome, job_id FROM flow_schedule_ticks WHERE schedule = ? ORDER BY fire_at",
                    [.text("minutely")]
                ).map { row -> String in
                    guard case .integer(let fireAt) = row[0], case .text(let outcome) = row[1] else { return "?" }
                    return "\((fireAt - start) / 1000) \(outcome)\(row[2] == .null ? "" : " job")"
                }
            })
    }

    /// The schedule's jobs, as seconds after the start of their ticks.
    func tickJobs() throws -> [Int] {
        let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: "minutely")
        return try wait(first.jobs(state: nil, queue: nil, limit: 1000)).compactMap { record in
            guard let key = record.uniqueKey, key.hasPrefix(prefix), let ms = Int64(key.dropFirst(prefix.count))
            else { return nil }
            return Int(ms / 1000 - Int64(ManualWallClock.start.timeIntervalSince1970))
        }.sorted()
    }
}

private func enqueuedIDs(_ result: ScheduleFiringResult) -> [JobID] {
    result.ticks.compactMap { if case .enqueued(let id) = $0.outcome { id } else { nil } }
}

@Suite("PostgresJobStore: a schedule's tick in one statement", .enabled(if: PostgresTestDatabase.runsTests))
struct PostgresScheduleFiringTests {
    /// Once the store has fired the schedule, a timer's tick is one statement, not a transaction, and
    /// leaves what the transaction's steps would: the job with the tick's key and the schedule's job
    /// fields, the tick's row, the schedule moved on, and this process's workers told of the job.
    @Test func aTimersTickFiresInOneStatementOnceTheStoreHasFiredTheSchedule() throws {
        let subject = try TwoSchedulers()
        defer { subject.close() }
        let store = subject.first
        let heard = Mutex<[JobStoreNotification]>([])
        let observation = store.observe { notification in heard.withLock { $0.append(notification) } }
        defer { observation.dispose() }

        _ = try wait(store.fireSchedule(subject.firing(dueSecond: nil)))
        subject.advance(toSecond: 60)
        let firstTick = try wait(store.fireSchedule(subject.firing(dueSecond: 60)))
        #expect(enqueuedIDs(firstTick).count == 1)
        let inTransaction = store.scheduleFiringsInTransaction.withLock { $0 }
        #expect(inTransaction == 2, "creating the schedule and its first tick run the transaction's steps")

        subject.advance(toSecond: 120)
        heard.withLock { $0.removeAll() }
        let fired = try wait(store.fireSchedule(subject.firing(dueSecond: 120)))
        #expect(store.scheduleFiringsInTransaction.withLock { $0 } == inTransaction, "the tick was one statement")
        let id = try #require(enqueuedIDs(fired).first)
        let tick = ManualWallClock.start.addingTimeInterval(120)
        #expect(fired.ticks == [ScheduleTick(fireTime: tick, outcome: .enqueued(id))] && fired.promoted == nil)
        #expect(fired.state.lastFiredAt == tick && fired.state.lastJobID == id && !fired.state.isPaused)
        #expect(fired.state.nextFireAt == ManualWallClock.start.addingTimeInterval(180))
        #expect(fired.state.description == (try JobSchedule.every(.seconds(60))).description)

        let record = try #require(try wait(store.job(id)))
        #expect(record.uniqueKey == ScheduleFiring.uniqueKey(schedule: "minutely", fireTime: tick))
        #expect(record.name == "tick" && record.queue == "reports" && record.priority == 3)
        #expect(record.state == .available && record.lifecycle.maxAttempts == 2 && record.payload == Data("{}".utf8))
        #expect(try subject.tickRows() == ["60 enqueued job", "120 enqueued job"])
        #expect(try subject.tickJobs() == [60, 120])
        #expect(
            heard.withLock { $0 }.contains {
                if case .enqueued(let queues) = $0 { queues == ["reports"] } else { false }
            },
            "the store's own workers hear of the job")
        let states = try wait(subject.second.schedules())
        #expect(states == [fired.state], "another store reads the state the statement wrote")
    }

    /// Two stores that both fire every tick, at once: each tick has one job, one caller is told it
    /// enqueued it and the other that it was fired already, and neither needs a transaction for it
    /// (the second's statement changes nothing and it reads the row the first committed).
    @Test func twoStoresFiringTheSameTicksAtOnceEnqueueOneJobEach() throws {
        let subject = try TwoSchedulers()
        defer { subject.close() }
        for store in [subject.first, subject.second] {
            _ = try wait(store.fireSchedule(subject.firing(dueSecond: nil)))
        }
        subject.advance(toSecond: 60)
        for store in [subject.first, subject.second] { _ = try wait(store.fireSchedule(subject.firing(dueSecond: 60))) }
        let transactions = [subject.first, subject.second].map { $0.scheduleFiringsInTransaction.withLock { $0 } }

        for minute in 2...6 {
            subject.advance(toSecond: minute * 60)
            let firing = try subject.firing(dueSecond: minute * 60)
            let both = [subject.first.fireSchedule(firing), subject.second.fireSchedule(firing)]
            let results = try both.map { try wait($0) }
            let tick = ManualWallClock.start.addingTimeInterval(Double(minute * 60))
            #expect(results.map { enqueuedIDs($0).count }.sorted() == [0, 1], "tick \(minute): one job")
            #expect(
                results.contains { $0.ticks == [ScheduleTick(fireTime: tick, outcome: .alreadyFired)] },
                "tick \(minute): the other caller is told it was fired")
            #expect(results.allSatisfy { $0.state.lastFiredAt == tick })
        }
        #expect(
            [subject.first, subject.second].map { $0.scheduleFiringsInTransaction.withLock { $0 } } == transactions)
        #expect(try subject.tickJobs() == [60, 120, 180, 240, 300, 360])
        #expect(try subject.tickRows().allSatisfy { $0.hasSuffix("enqueued job") })
    }

    /// The one statement fires only what the transaction's steps would: with the previous tick's job
    /// unfinished, a skipping schedule's tick is skipped; paused by another store, the tick enqueues
    /// nothing; resumed, the next tick enqueues again.
    @Test func theOneStatementKeepsTheOverlapAndThePause() throws {
        let subject = try TwoSchedulers()
        defer { subject.close() }
        let store = subject.first
        _ = try wait(store.fireSchedule(subject.firing(dueSecond: nil, overlap: .skip)))
        subject.advance(toSecond: 60)
        let first = try #require(
            enqueuedIDs(try wait(store.fireSchedule(subject.firing(dueSecond: 60, overlap: .skip)))).first)

        subject.advance(toSecond: 120)
        let skipped = try wait(store.fireSchedule(subject.firing(dueSecond: 120, overlap: .skip)))
        #expect(skipped.ticks.map(\.outcome) == [.skipped(previous: first)])

        _ = try wait(subject.second.setSchedulePaused(true, name: "minutely"))
        subject.advance(toSecond: 180)
        let paused = try wait(store.fireSchedule(subject.firing(dueSecond: 180, overlap: .skip)))
        #expect(paused.ticks.isEmpty && paused.state.isPaused)

        // The first job finishes; resumed, the schedule fires its next tick (and catches up on none of
        // the paused one's, `latest` keeping only the due one).
        let claimed = try wait(
            store.claim(
                ClaimRequest(
                    slotsByQueue: ["reports": 1], names: ["tick"], worker: "w", leaseDuration: .seconds(60),
                    maxLeaseExpiries: 3)))
        let job = try #require(claimed.jobs.first)
        _ = try wait(store.finish(JobLease(id: job.id, fence: job.lifecycle.fence), outcome: .completed, effects: nil))
        _ = try wait(subject.second.setSchedulePaused(false, name: "minutely"))
        subject.advance(toSecond: 240)
        let resumed = try wait(store.fireSchedule(subject.firing(dueSecond: 240, overlap: .skip)))
        #expect(enqueuedIDs(resumed).count == 1)
        #expect(try subject.tickJobs() == [60, 240])
        #expect(try subject.tickRows() == ["60 enqueued job", "120 skipped", "240 enqueued job"])
    }
}
