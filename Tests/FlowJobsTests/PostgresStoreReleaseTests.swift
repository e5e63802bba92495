import Dispatch
import Flow
import FlowJobs
@testable import FlowJobsPostgres
import FlowTestSupport
import Foundation
import Testing

/// What a closed store left behind, held weakly: each is `nil` once nothing keeps it.
private struct LeftBehind {
    weak var store: PostgresJobStore?
    weak var pool: PostgresConnectionPool?
    weak var connection: PostgresConnection?
    weak var election: PostgresLeaderElection?
    weak var rescuer: PostgresLeaderElection?
    weak var unstopped: PostgresLeaderElection?
    /// Counts the libpq connections of the store, its listener and its elections.
    let openCount: OpenConnectionCount

    var isGone: Bool {
        store == nil && pool == nil && connection == nil && election == nil && rescuer == nil
            && unstopped == nil
    }
}

@Suite("PostgresJobStore: nothing left alive once closed", .enabled(if: PostgresTestDatabase.runsTests))
struct PostgresStoreReleaseTests {
    /// A store that claimed, completed, rescued as the leader and ran a leader's transactions, closed
    /// with two of its elections stopped and one left running, is freed with its pool, its
    /// connections (with their prepared statements) and its elections, every connection finished: no
    /// reference cycle keeps any of them, and the close stops the election left running.
    @Test func aClosedStoreItsPoolConnectionsAndElectionsAreFreed() throws {
        let left = try useAndClose()
        // What still refers to them once closed is work queued on the loop (a close's hop, a poll
        // handle's close callback): a few of its turns run it.
        let loop = PostgresTestDatabase.loop
        for _ in 0..<20 where !left.isGone { loop.performAndWait {} }
        #expect(left.store == nil, "the store")
        #expect(left.pool == nil, "the pool")
        #expect(left.connection == nil, "a connection of the pool, with its prepared statements")
        #expect(left.election == nil, "a stopped election that ran transactions")
        #expect(left.rescuer == nil, "a stopped election that rescued as the leader")
        #expect(left.unstopped == nil, "an election its caller left running, stopped by the store's close")
        #expect(left.openCount.value == 0)
    }

    private func useAndClose() throws -> LeftBehind {
        let wallClock = ManualWallClock()
        let store = try PostgresTestDatabase.openStore(clock: wallClock.jobClock)
        let job = NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 3)
        _ = try wait(store.enqueue([job, job, job]))
        let claimed = try wait(
            store.claim(
                ClaimRequest(
                    slotsByQueue: ["default": 3], names: ["task"], worker: "w", leaseDuration: .seconds(5),
                    maxLeaseExpiries: 3)))
        try #require(claimed.jobs.count == 3)
        for claimedJob in claimed.jobs.prefix(2) {
            let lease = JobLease(id: claimedJob.id, fence: claimedJob.fence)
            _ = try wait(store.finish(lease, outcome: .completed, effects: nil))
        }

        // The third job's lease ends: the leader's rescue, in its transaction, makes it retryable.
        wallClock.advance(by: 5)
        let rescued = DispatchSemaphore(value: 0)
        let observation = store.observe { notification in
            if case .enqueued(let queues) = notification, queues.contains("default") { rescued.signal() }
        }
        let rescuer = store.rescuesExpiredLeasesWhileLeading(every: .milliseconds(20), maxLeaseExpiries: 3)
        expectSignal(rescued, "the leader's rescue")

        let leads = DispatchSemaphore(value: 0)
        let election = store.electLeader(for: "release") { isLeader in if isLeader { leads.signal() } }
        expectSignal(leads, "the election's lead")
        for _ in 0..<2 { _ = try wait(election.transaction { try $0.query("SELECT 1", []) }) }
        let unstoppedLeads = DispatchSemaphore(value: 0)
        let unstopped = store.electLeader(for: "unstopped") { isLeader in if isLeader { unstoppedLeads.signal() } }
        expectSignal(unstoppedLeads, "the election left running leads")

        let connection = try wait(store.pool.acquire())
        _ = try wait(connection.query("SELECT $1::bigint", [.integer(7)], prepared: true))
        store.pool.release(connection)

        observation.dispose()
        rescuer.stop()
        election.stop()
        try wait(store.close())
        return LeftBehind(
            store: store, pool: store.pool, connection: connection, election: election, rescuer: rescuer,
            unstopped: unstopped, openCount: store.pool.openCount)
    }
}
