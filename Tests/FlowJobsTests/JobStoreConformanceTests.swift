import Flow
import FlowJobs
import Foundation
import Synchronization
import Testing

/// A way to open a store for the conformance suite. Every store joins `all`: the suite's tests run once
/// per entry. PostgreSQL's entry (a fresh schema per test) is there when the tests have a server.
struct JobStoreFactory: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let open: @Sendable (JobClock, TemporaryDirectory) throws -> any JobStore

    static let all: [JobStoreFactory] = [
        JobStoreFactory(testDescription: "SQLite file, writer thread") { clock, directory in
            try SQLiteJobStore(path: directory.path("jobs.sqlite"), configuration: .init(clock: clock))
        },
        JobStoreFactory(testDescription: "SQLite in memory, calling thread") { clock, _ in
            try SQLiteJobStore.inMemory(configuration: .init(clock: clock, execution: .callingThread))
        },
    ] + PostgresTestDatabase.factories
}

/// One store under test, its clock, and shorthands for the protocol's calls.
private struct Subject {
    let wallClock = ManualWallClock()
    let directory = TemporaryDirectory()
    let store: any JobStore

    init(_ factory: JobStoreFactory) throws {
        store = try factory.open(wallClock.jobClock, directory)
    }

    func enqueue(
        _ name: String = "task", queue: String = "default", priority: Int = 0, after delay: Double? = nil,
        maxAttempts: Int = 3, uniqueKey: String? = nil
    ) async throws -> EnqueuedJob {
        let runAt = delay.map { wallClock.jobClock.now().addingTimeInterval($0) }
        let job = NewJob(
            name: name, queue: queue, payload: Data("{}".utf8), priority: priority, runAt: runAt,
            maxAttempts: maxAttempts, uniqueKey: uniqueKey)
        return try await store.enqueue([job]).get()[0]
    }

    func claim(
        _ slots: [String: Int] = ["default": 10], names: Set<String> = ["task"], worker: String = "worker-1",
        lease: Duration = .seconds(15), maxLeaseExpiries: Int = 3, measuresQueues: Bool = false,
        lookahead: Duration = .zero
    ) async throws -> ClaimResult {
        try await store.claim(
            ClaimRequest(
                slotsByQueue: slots, names: names, worker: worker, leaseDuration: lease,
                maxLeaseExpiries: maxLeaseExpiries, measuresQueues: measuresQueues, lookahead: lookahead)
        ).get()
    }

    func record(_ id: JobID) async throws -> JobRecord {
        try #require(try await store.job(id).get())
    }
}

private func lease(_ record: JobRecord) -> JobLease { JobLease(id: record.id, fence: record.fence) }

@Suite("JobStore conformance: what every store does")
struct JobStoreConformanceTests {
    @Test(arguments: JobStoreFactory.all)
    func anEnqueuedJobIsKeptWithEverythingItWasGiven(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let now = subject.wallClock.jobClock.now()
        let job = NewJob(
            name: "task", queue: "mail", payload: Data("{\"a\":1}".utf8), priority: 7, runAt: now.addingTimeInterval(60),
            maxAttempts: 4, uniqueKey: "k")
        let enqueued = try await subject.store.enqueue([job]).get()
        #expect(enqueued.count == 1 && !enqueued[0].isDuplicate && enqueued[0].state == .scheduled)
        let record = try await subject.record(enqueued[0].id)
        #expect(record.name == "task" && record.queue == "mail" && record.payload == job.payload)
        #expect(record.priority == 7 && record.uniqueKey == "k" && record.lifecycle.maxAttempts == 4)
        #expect(record.state == .scheduled && record.attempt == 0 && record.fence == 0)
        #expect(record.runAt == now.addingTimeInterval(60) && record.createdAt == now)
        #expect(record.leaseExpiresAt == nil && record.finishedAt == nil)
        #expect(try await subject.store.job(JobID(rawValue: 999_999)).get() == nil)
    }

    @Test(arguments: JobStoreFactory.all)
    func aTimeoutGivenAtTheEnqueueIsKeptWithTheJobThroughItsClaim(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        // A batch without unique keys and a job with one: stores may add them by different statements.
        let jobs = [
            NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 3, timeout: .milliseconds(1_500)),
            NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 3),
            NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 3, uniqueKey: "timed", timeout: .seconds(90)),
        ]
        let enqueued = try await subject.store.enqueue(Array(jobs[0...1])).get()
            + subject.store.enqueue([jobs[2]]).get()
        #expect(try await subject.record(enqueued[0].id).timeout == .milliseconds(1_500))
        #expect(try await subject.record(enqueued[1].id).timeout == nil)
        #expect(try await subject.record(enqueued[2].id).timeout == .seconds(90))
        let claimed = try await subject.claim().jobs
        #expect(Set(claimed.map { $0.id }) == Set(enqueued.map { $0.id }))
        #expect(claimed.first { $0.id == enqueued[2].id }?.timeout == .seconds(90))
    }

    @Test(arguments: JobStoreFactory.all)
    func aClaimTakesDueJobsByPriorityThenRunTimeUpToTheSlots(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let low = try await subject.enqueue(priority: 0)
        let high = try await subject.enqueue(priority: 5)
        let later = try await subject.enqueue(priority: 9, after: 30)
        let other = try await subject.enqueue("other-kind", priority: 9)
        let elsewhere = try await subject.enqueue(queue: "elsewhere", priority: 9)

        let first = try await subject.claim(["default": 1], lease: .seconds(3600))
        #expect(first.jobs.map(\.id) == [high.id])
        let second = try await subject.claim(["default": 5], lease: .seconds(3600))
        #expect(second.jobs.map(\.id) == [low.id])
        // Nothing else is due in the queue for the names asked: the claim says when to look again.
        #expect(second.nextWakeAt == subject.wallClock.jobClock.now().addingTimeInterval(30))
        for untouched in [later.id, other.id, elsewhere.id] {
            #expect(try await subject.record(untouched).state != .running)
        }
        subject.wallClock.advance(by: 30)
        #expect(try await subject.claim().jobs.map(\.id) == [later.id])
    }

    @Test(arguments: JobStoreFactory.all)
    func aClaimCountsAnAttemptRaisesTheFenceAndTakesALease(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let job = try await subject.enqueue()
        let claimed = try #require(try await subject.claim(worker: "w-a", lease: .seconds(15)).jobs.first)
        #expect(claimed.id == job.id && claimed.state == .running && claimed.attempt == 1 && claimed.fence == 1)
        #expect(claimed.worker == "w-a")
        #expect(claimed.leaseExpiresAt == subject.wallClock.jobClock.now().addingTimeInterval(15))
        #expect(try await subject.claim().jobs.isEmpty, "a running job is not claimed twice")
    }

    /// The worker claims a little ahead and starts such a job from a timer at its run time.
    @Test(arguments: JobStoreFactory.all)
    func aClaimWithALookaheadAlsoTakesJobsDueWithinItAndWakesForTheNextOne(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let now = subject.wallClock.jobClock.now()
        let soon = try await subject.enqueue(after: 1)
        let later = try await subject.enqueue(after: 60)
        let plain = try await subject.claim()
        #expect(plain.jobs.isEmpty, "without a lookahead neither job is due")
        #expect(plain.nextWakeAt == now.addingTimeInterval(1))
        let ahead = try await subject.claim(lookahead: .seconds(2))
        #expect(ahead.jobs.map(\.id) == [soon.id], "the job due within the lookahead, not the one after it")
        let claimed = try #require(ahead.jobs.first)
        #expect(claimed.state == .running && claimed.attempt == 1 && claimed.runAt == now.addingTimeInterval(1))
        #expect(claimed.leaseExpiresAt == now.addingTimeInterval(15), "the lease runs from the claim")
        #expect(ahead.nextWakeAt == now.addingTimeInterval(60))
        // A claim that measures its queues (a transaction on PostgreSQL) looks ahead the same way and
        // counts only the jobs due now.
        let measured = try await subject.claim(measuresQueues: true, lookahead: .seconds(60))
        #expect(measured.jobs.map(\.id) == [later.id])
        #expect(measured.queues["default"] == QueueMeasurement(dueCount: 0, oldestDueAt: nil))
    }

    @Test(arguments: JobStoreFactory.all)
    func aHeartbeatExtendsTheLeaseAndAStaleFenceIsTold(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        _ = try await subject.enqueue()
        let claimed = try #require(try await subject.claim().jobs.first)
        subject.wallClock.advance(by: 10)
        let beat = try await subject.store.heartbeat(lease(claimed), leaseDuration: .seconds(15)).get()
        #expect(beat.leaseExpiresAt == subject.wallClock.jobClock.now().addingTimeInterval(15))
        #expect(!beat.isCancellationRequested)
        subject.wallClock.advance(by: 10)
        #expect(try await subject.claim().jobs.isEmpty, "the extended lease still holds")
        let stale = JobLease(id: claimed.id, fence: claimed.fence - 1)
        await #expect(throws: JobStoreError.leaseLost(stale)) {
            try await subject.store.heartbeat(stale, leaseDuration: .seconds(15)).get()
        }
    }

    @Test(arguments: JobStoreFactory.all)
    func completingRecordsTheEndAndAStaleFenceChangesNothing(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        _ = try await subject.enqueue()
        let claimed = try #require(try await subject.claim().jobs.first)
        let stale = JobLease(id: claimed.id, fence: claimed.fence + 1)
        await #expect(throws: JobStoreError.leaseLost(stale)) {
            try await subject.store.finish(stale, outcome: .completed, effects: nil).get()
        }
        #expect(try await subject.record(claimed.id).state == .running)
        let done = try await subject.store.finish(lease(claimed), outcome: .completed, effects: nil).get()
        #expect(done.state == .completed && done.finishedAt != nil && done.leaseExpiresAt == nil)
        await #expect(throws: JobStoreError.leaseLost(lease(claimed))) {
            try await subject.store.finish(lease(claimed), outcome: .completed, effects: nil).get()
        }
    }

    @Test(arguments: JobStoreFactory.all)
    func aFailureIsRetriedAtItsTimeUntilTheAttemptsRunOut(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        _ = try await subject.enqueue(maxAttempts: 2)
        let first = try #require(try await subject.claim().jobs.first)
        let retryAt = subject.wallClock.jobClock.now().addingTimeInterval(20)
        let failed = try await subject.store.finish(
            lease(first), outcome: .failed(error: "boom", retryAt: retryAt), effects: nil
        ).get()
        #expect(failed.state == .retryable && failed.runAt == retryAt && failed.lastError == "boom")
        #expect(try await subject.claim().jobs.isEmpty, "not before its retry time")
        subject.wallClock.advance(by: 20)
        let second = try #require(try await subject.claim().jobs.first)
        #expect(second.attempt == 2 && second.fence == 2)
        let discarded = try await subject.store.finish(
            lease(second), outcome: .failed(error: "again", retryAt: retryAt), effects: nil
        ).get()
        #expect(discarded.state == .discarded && discarded.lastError == "again")
    }

    @Test(arguments: JobStoreFactory.all)
    func anExpiredLeaseIsRescuedOnlyAfterItEndsAndTheOldFenceIsRefused(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        _ = try await subject.enqueue()
        let first = try #require(try await subject.claim(worker: "dead", lease: .seconds(15)).jobs.first)
        subject.wallClock.advance(by: 14.9)
        let early = try await subject.claim(worker: "alive")
        #expect(early.jobs.isEmpty, "the lease has not ended")
        #expect(early.nextWakeAt == first.leaseExpiresAt, "a claim wakes at another worker's lease end")
        subject.wallClock.advance(by: 0.1)
        let rescued = try #require(try await subject.claim(worker: "alive").jobs.first)
        #expect(rescued.id == first.id && rescued.attempt == 2 && rescued.fence == 2)
        #expect(rescued.lifecycle.leaseExpiries == 1 && rescued.worker == "alive")
        await #expect(throws: JobStoreError.leaseLost(lease(first))) {
            try await subject.store.finish(lease(first), outcome: .completed, effects: nil).get()
        }
        #expect(try await subject.store.finish(lease(rescued), outcome: .completed, effects: nil).get().state == .completed)
    }

    @Test(arguments: JobStoreFactory.all)
    func aRescuedJobKeepsItsRunTimeAndRunsBeforeJobsThatCameDueDuringItsLease(_ factory: JobStoreFactory)
        async throws
    {
        let subject = try Subject(factory)
        let killed = try await subject.enqueue()
        let first = try #require(try await subject.claim(worker: "dead", lease: .seconds(15)).jobs.first)
        #expect(first.id == killed.id)
        subject.wallClock.advance(by: 5)
        let later = [try await subject.enqueue(), try await subject.enqueue()]
        subject.wallClock.advance(by: 10)
        let next = try await subject.claim(["default": 1], worker: "alive")
        #expect(next.rescued.map(\.id) == [killed.id])
        #expect(next.jobs.map(\.id) == [killed.id], "the rescued job runs first, not behind \(later.map(\.id))")
        #expect(next.jobs.first?.runAt == first.runAt, "it keeps its original run time")
    }

    @Test(arguments: JobStoreFactory.all)
    func aJobWhoseLeaseKeepsExpiringWithNoErrorIsQuarantinedNamingItsLastWorker(_ factory: JobStoreFactory)
        async throws
    {
        let subject = try Subject(factory)
        let job = try await subject.enqueue(maxAttempts: 10)
        for round in 1...3 {
            let claimed = try await subject.claim(worker: "worker-\(round)", lease: .seconds(5)).jobs
            #expect(claimed.map(\.id) == [job.id])
            subject.wallClock.advance(by: 5)
        }
        #expect(try await subject.claim(worker: "worker-4").jobs.isEmpty)
        let record = try await subject.record(job.id)
        #expect(record.state == .quarantined && record.lifecycle.leaseExpiries == 3)
        #expect(record.worker == "worker-3" && record.finishedAt != nil)
    }

    @Test(arguments: JobStoreFactory.all)
    func aUniqueKeyAddsOneUnfinishedJobAndIsFreeAgainOnceItFinishes(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let first = try await subject.enqueue(uniqueKey: "report-2026-11")
        let again = try await subject.enqueue(uniqueKey: "report-2026-11")
        #expect(!first.isDuplicate && again.isDuplicate && again.id == first.id)
        let claimed = try #require(try await subject.claim().jobs.first)
        #expect(try await subject.enqueue(uniqueKey: "report-2026-11").isDuplicate, "running is unfinished")
        _ = try await subject.store.finish(lease(claimed), outcome: .completed, effects: nil).get()
        let after = try await subject.enqueue(uniqueKey: "report-2026-11")
        #expect(!after.isDuplicate && after.id != first.id)
    }

    @Test(arguments: JobStoreFactory.all)
    func cancellingAQueuedJobCancelsItAndARunningOneAsksItsWorker(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let queued = try await subject.enqueue(after: 60)
        #expect(try await subject.store.cancel(queued.id).get() == .cancelled)
        #expect(try await subject.record(queued.id).state == .cancelled)
        #expect(try await subject.store.cancel(queued.id).get() == .alreadyFinished(.cancelled))
        #expect(try await subject.store.cancel(JobID(rawValue: 424_242)).get() == .notFound)

        _ = try await subject.enqueue()
        let running = try #require(try await subject.claim().jobs.first)
        #expect(try await subject.store.cancel(running.id).get() == .requested)
        #expect(try await subject.record(running.id).state == .running)
        let beat = try await subject.store.heartbeat(lease(running), leaseDuration: .seconds(15)).get()
        #expect(beat.isCancellationRequested)
        let stopped = try await subject.store.finish(lease(running), outcome: .cancelled, effects: nil).get()
        #expect(stopped.state == .cancelled)
    }

    @Test(arguments: JobStoreFactory.all)
    func aReleasedJobIsAvailableAtOnceWithItsAttemptNotCounted(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        _ = try await subject.enqueue()
        let claimed = try #require(try await subject.claim(worker: "leaving").jobs.first)
        try await subject.store.release(lease(claimed)).get()
        let again = try #require(try await subject.claim(worker: "staying").jobs.first)
        #expect(again.id == claimed.id && again.attempt == 1 && again.fence == 2)
        await #expect(throws: JobStoreError.leaseLost(lease(claimed))) {
            try await subject.store.release(lease(claimed)).get()
        }
    }

    @Test(arguments: JobStoreFactory.all)
    func effectsCommitWithTheCompletionOrNotAtAll(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        try await subject.store.transaction { transaction in
            _ = try transaction.execute("CREATE TABLE effects (job INTEGER PRIMARY KEY)", [])
        }.get()
        _ = try await subject.enqueue()
        _ = try await subject.enqueue()
        let claimed = try await subject.claim().jobs
        let (kept, failing) = (claimed[0], claimed[1])
        let write: @Sendable (JobRecord) -> @Sendable (any JobTransaction) throws -> Void = { record in
            { transaction in try transaction.execute("INSERT INTO effects VALUES (?)", [.integer(record.id.rawValue)]) }
        }
        _ = try await subject.store.finish(lease(kept), outcome: .completed, effects: write(kept)).get()
        await #expect(throws: TestFailure.self) {
            try await subject.store.finish(lease(failing), outcome: .completed) { transaction in
                try write(failing)(transaction)
                throw TestFailure()
            }.get()
        }
        #expect(try await subject.record(failing.id).state == .running, "the failed completion rolled back")
        // A stale lease's effects never run into the database either.
        await #expect(throws: JobStoreError.leaseLost(lease(kept))) {
            try await subject.store.finish(lease(kept), outcome: .completed, effects: write(kept)).get()
        }
        let rows = try await subject.store.transaction { transaction in
            try transaction.query("SELECT job FROM effects ORDER BY job", [])
        }.get()
        #expect(rows == [[.integer(kept.id.rawValue)]])
    }

    @Test(arguments: JobStoreFactory.all)
    func aJobEnqueuedInTheCallersTransactionExistsOnlyIfItCommits(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let job = NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 1)
        let committed = try await subject.store.transaction { transaction in
            try transaction.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)", [])
            try transaction.execute("INSERT INTO orders VALUES (1)", [])
            return try transaction.enqueue(job)
        }.get()
        #expect(try await subject.record(committed.id).state == .available)
        await #expect(throws: TestFailure.self) {
            try await subject.store.transaction { transaction in
                try transaction.execute("INSERT INTO orders VALUES (2)", [])
                _ = try transaction.enqueue(job)
                throw TestFailure()
            }.get()
        }
        #expect(try await subject.store.jobs(state: nil, queue: nil, limit: 10).get().map(\.id) == [committed.id])
        let orders = try await subject.store.transaction { try $0.query("SELECT id FROM orders", []) }.get()
        #expect(orders == [[.integer(1)]])
    }

    @Test(arguments: JobStoreFactory.all)
    func observersHearOfEnqueuesCancellationRequestsAndEndsAfterTheCommit(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let heard = Synchronization.Mutex<[JobStoreNotification]>([])
        let observation = subject.store.observe { notification in heard.withLock { $0.append(notification) } }
        defer { observation.dispose() }
        let job = try await subject.enqueue(queue: "mail")
        let claimed = try #require(try await subject.claim(["mail": 1]).jobs.first)
        _ = try await subject.store.cancel(job.id).get()
        let done = try await subject.store.finish(lease(claimed), outcome: .completed, effects: nil).get()
        #expect(heard.withLock { $0 } == [.enqueued(queues: ["mail"]), .cancellationRequested(job.id), .finished(done)])
        observation.dispose()
        _ = try await subject.enqueue()
        #expect(heard.withLock { $0.count } == 3, "nothing is heard after disposing")
    }

    @Test(arguments: JobStoreFactory.all)
    func listingFiltersByStateAndQueueInIdentifierOrder(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let a = try await subject.enqueue(queue: "a")
        let b = try await subject.enqueue(queue: "b")
        let c = try await subject.enqueue(queue: "a", after: 10)
        #expect(try await subject.store.jobs(state: nil, queue: nil, limit: 10).get().map(\.id) == [a.id, b.id, c.id])
        #expect(try await subject.store.jobs(state: nil, queue: "a", limit: 10).get().map(\.id) == [a.id, c.id])
        #expect(try await subject.store.jobs(state: .scheduled, queue: nil, limit: 10).get().map(\.id) == [c.id])
        #expect(try await subject.store.jobs(state: nil, queue: nil, limit: 1).get().map(\.id) == [a.id])
    }

    @Test(arguments: JobStoreFactory.all)
    func aBatchEnqueueAddsEveryJobInOneCall(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        let jobs = (0..<100).map { index in
            NewJob(name: "task", queue: "default", payload: Data("\(index)".utf8), maxAttempts: 1)
        }
        let enqueued = try await subject.store.enqueue(jobs).get()
        #expect(Set(enqueued.map(\.id)).count == 100)
        #expect(try await subject.claim(["default": 1000]).jobs.count == 100)
    }

    @Test(arguments: JobStoreFactory.all)
    func aQueuesLimitKeptInTheStoreBoundsEveryWorkersClaims(_ factory: JobStoreFactory) async throws {
        let subject = try Subject(factory)
        for _ in 0..<5 { _ = try await subject.enqueue() }
        try await subject.store.setConcurrencyLimit(2, forQueue: "default").get()
        let first = try await subject.claim(["default": 10], worker: "a").jobs
        let second = try await subject.claim(["default": 10], worker: "b").jobs
        #expect(first.count == 2 && second.isEmpty)
        _ = try await subject.store.finish(lease(first[0]), outcome: .completed, effects: nil).get()
        #expect(try await subject.claim(["default": 10], worker: "b").jobs.count == 1)
        try await subject.store.setConcurrencyLimit(nil, forQueue: "default").get()
        #expect(try await subject.claim(["default": 10], worker: "c").jobs.count == 2)
    }
}
