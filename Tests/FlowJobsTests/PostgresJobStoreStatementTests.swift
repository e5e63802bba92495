import Dispatch
import Flow
import FlowJobs
import FlowJobsPostgres
import FlowTestSupport
import Foundation
import Testing

@Suite(
    "PostgresJobStore: claims and completions in one statement, commit options",
    .enabled(if: PostgresTestDatabase.runsTests))
struct PostgresJobStoreStatementTests {
    private func openStore(schema: String, maxConnections: Int = 4, synchronousCommit: Bool = true) throws
        -> PostgresJobStore
    {
        try wait(
            PostgresJobStore.open(
                url: try PostgresTestDatabase.requireURL(), on: PostgresTestDatabase.loop,
                configuration: .init(
                    schema: schema, maxConnections: maxConnections, safetyPollInterval: nil,
                    synchronousCommit: synchronousCommit)))
    }

    private func newJob(_ queue: String = "default", runAt: Date? = nil) -> NewJob {
        NewJob(name: "task", queue: queue, payload: Data("{}".utf8), runAt: runAt, maxAttempts: 3)
    }

    @Test func completionsThatArriveWhileTheConnectionIsBusyCommitTogetherAndAStaleLeaseAmongThemIsRefused() throws {
        let store = try openStore(schema: PostgresTestDatabase.freshSchema(), maxConnections: 1)
        defer { store.close() }
        _ = try wait(store.enqueue(Array(repeating: newJob(), count: 20)))
        let claimed = try wait(
            store.claim(
                ClaimRequest(
                    slotsByQueue: ["default": 20], names: ["task"], worker: "w", leaseDuration: .seconds(30),
                    maxLeaseExpiries: 3))
        ).jobs
        #expect(claimed.count == 20)
        // The pool's only connection is held by a transaction until every completion has been asked for.
        let holding = DispatchSemaphore(value: 0)
        let letGo = DispatchSemaphore(value: 0)
        let held = store.transaction { _ in
            holding.signal()
            letGo.wait()
        }
        expectSignal(holding, "the transaction holding the connection")
        let stale = JobLease(id: claimed[0].id, fence: claimed[0].fence + 1)
        let completions = claimed.map {
            store.finish(JobLease(id: $0.id, fence: $0.fence), outcome: .completed, effects: nil)
        }
        let refused = store.finish(stale, outcome: .completed, effects: nil)
        letGo.signal()
        try wait(held)
        for (completion, job) in zip(completions, claimed) {
            let record = try wait(completion)
            #expect(record.id == job.id && record.state == .completed && record.finishedAt != nil)
            #expect(record.leaseExpiresAt == nil && record.fence == job.fence && record.worker == "w")
        }
        #expect(throws: JobStoreError.leaseLost(stale)) { try wait(refused) }
        let history = try wait(
            store.transaction { transaction in
                try transaction.query(
                    "SELECT count(*), count(DISTINCT xmin::text), min(state), max(state) FROM flow_jobs_history", [])
            })
        #expect(history == [[.integer(20), .integer(1), .text("completed"), .text("completed")]], "one commit for all")
        #expect(try wait(store.jobs(state: .running, queue: nil, limit: 100)).isEmpty)
    }

    @Test func aClaimOfSeveralQueuesTakesEachQueuesSlotsAndWakesForTheNextJobOfAQueueWithSlotsLeft() throws {
        // A clock that stands still: the delayed job stays a minute away.
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let url = try PostgresTestDatabase.requireURL()
        let store = try wait(
            PostgresJobStore.open(
                url: url, on: PostgresTestDatabase.loop,
                configuration: .init(
                    clock: JobClock { now }, schema: PostgresTestDatabase.freshSchema(), safetyPollInterval: nil)))
        defer { store.close() }
        let later = now.addingTimeInterval(60)
        _ = try wait(store.enqueue(Array(repeating: newJob("mail"), count: 3)))
        _ = try wait(store.enqueue([newJob("sms"), newJob("sms", runAt: later)]))
        let request = ClaimRequest(
            slotsByQueue: ["mail": 2, "sms": 5, "idle": 0], names: ["task"], worker: "w",
            leaseDuration: .seconds(30), maxLeaseExpiries: 3)
        let first = try wait(store.claim(request))
        #expect(first.jobs.map(\.queue).sorted() == ["mail", "mail", "sms"])
        #expect(first.jobs.allSatisfy { $0.state == .running && $0.attempt == 1 && $0.worker == "w" })
        #expect(first.nextWakeAt == later, "sms has slots left: its delayed job; not a job claimed here")
        let second = try wait(store.claim(request))
        #expect(second.jobs.map(\.queue) == ["mail"])
        #expect(second.nextWakeAt == later)
    }

    @Test func theStoresSessionsCommitWithTheSynchronousCommitSettingAsked() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let durable = try openStore(schema: schema)
        let fast = try openStore(schema: schema, synchronousCommit: false)
        defer {
            durable.close()
            fast.close()
        }
        let show: @Sendable (any JobTransaction) throws -> [[SQLValue]] = {
            try $0.query("SHOW synchronous_commit", [])
        }
        #expect(try wait(durable.transaction(show)) == [[.text("on")]])
        #expect(try wait(fast.transaction(show)) == [[.text("off")]])
        // Its one-statement paths run on the same sessions.
        let enqueued = try wait(fast.enqueue([newJob()]))
        #expect(try wait(durable.job(enqueued[0].id))?.state == .available)
    }
}
