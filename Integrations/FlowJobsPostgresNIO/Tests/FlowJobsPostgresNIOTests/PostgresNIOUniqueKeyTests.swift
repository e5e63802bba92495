import Flow
import FlowJobs
import FlowJobsPostgres
import FlowJobsPostgresNIO
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

@Suite(
    "FlowJobsPostgresNIO: unique keys in a postgres-nio transaction", .enabled(if: TestServer.runsTests),
    .timeLimit(.minutes(1)))
struct PostgresNIOUniqueKeyTests {
    func job(_ text: String, key: String?) -> NewJob {
        NewJob(name: "message", queue: "default", payload: Data(text.utf8), maxAttempts: 3, uniqueKey: key)
    }

    @Test func aLiveJobsKeyAnswersThatJobInTheBatchInLaterTransactionsAndInTheStoresOwnEnqueue() async throws {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        defer { store.close() }
        let first = try await TestServer.withConnection { connection in
            try await connection.withTransaction(logger: TestServer.logger) { connection in
                try await connection.enqueueJobs(
                    [job("a", key: nil), job("b", key: "order-1"), job("c", key: "order-1"), job("d", key: nil)],
                    schema: schema, logger: TestServer.logger)
            }
        }
        #expect(first.map(\.isDuplicate) == [false, false, true, false])
        #expect(first[2].id == first[1].id && first[2].state == .available)
        #expect(Set(first.map(\.id)).count == 3 && first[0].id.rawValue < first[1].id.rawValue)
        #expect(first[1].id.rawValue < first[3].id.rawValue)

        let again = try await TestServer.withConnection { connection in
            try await connection.withTransaction(logger: TestServer.logger) { connection in
                try await connection.enqueueJob(job("e", key: "order-1"), schema: schema, logger: TestServer.logger)
            }
        }
        #expect(again.isDuplicate && again.id == first[1].id && again.state == .available)
        let fromStore = try await store.enqueue([job("f", key: "order-1")]).get()
        #expect(fromStore.first?.isDuplicate == true && fromStore.first?.id == first[1].id)

        let jobs = try await store.jobs(state: nil, queue: nil, limit: 10).get()
        #expect(jobs.count == 3)
        let keyed = try #require(try await store.job(first[1].id).get())
        #expect(keyed.uniqueKey == "order-1" && keyed.payload == Data("b".utf8) && keyed.state == .available)
    }

    @Test func aKeyedJobIsRunByAWorkerWokenByItsNotificationAndItsKeyIsFreeOnceItFinished() async throws {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        defer { store.close() }
        let worker = JobWorker(
            store: store, scheduler: TestServer.loop.scheduler, configuration: .init(concurrencyByQueue: ["default": 1])
        )
        worker.register(JobKind<Message>(name: "message", maxAttempts: 3)) { _, _ in Future() }
        TestServer.loop.performAndWait { worker.start() }
        // The worker's store has no safety poll: only the commit's NOTIFY wakes it.
        let enqueue: @Sendable (String) async throws -> EnqueuedJob = { text in
            try await TestServer.withConnection { connection in
                try await connection.withTransaction(logger: TestServer.logger) { connection in
                    try await connection.enqueueJob(
                        NewJob(
                            name: "message", queue: "default", payload: try JSONEncoder().encode(Message(text: text)),
                            maxAttempts: 3, uniqueKey: "daily"),
                        schema: schema, logger: TestServer.logger)
                }
            }
        }
        let first = try await enqueue("one")
        let client = JobClient(store: store)
        #expect(try await client.handle(for: first.id).finished().get().state == .completed)
        // A finished job holds no key: the same key adds a new job.
        let second = try await enqueue("two")
        #expect(!second.isDuplicate && second.id != first.id)
        #expect(try await client.handle(for: second.id).finished().get().state == .completed)
        try await worker.shutdown(gracePeriod: .seconds(5)).get()
    }

    @Test func aKeyedEnqueueThatRollsBackLeavesTheKeyFree() async throws {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        defer { store.close() }
        do {
            try await TestServer.withConnection { connection in
                try await connection.withTransaction(logger: TestServer.logger) { connection in
                    try await connection.enqueueJob(job("a", key: "k"), schema: schema, logger: TestServer.logger)
                    throw Abandoned()
                }
            }
            Issue.record("the transaction committed")
        } catch let error as PostgresTransactionError {
            #expect(error.closureError is Abandoned, "\(error)")
        }
        let enqueued = try await store.enqueue([job("b", key: "k")]).get()
        #expect(enqueued.first?.isDuplicate == false)
        #expect(try await store.jobs(state: nil, queue: nil, limit: 10).get().map(\.payload) == [Data("b".utf8)])
    }

    @Test func aKeyCommittedByAnotherTransactionWhileTheInsertWaitsAnswersThatJob() async throws {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        defer { store.close() }
        // The first transaction adds the key and holds it uncommitted until the second one's insert
        // waits on it; the second's lookup saw nothing, so its insert adds nothing once the first
        // commits, and its next round answers the first's job.
        let holder = try await TestServer.withConnection { connection in
            try await connection.withTransaction(logger: TestServer.logger) { connection in
                let enqueued = try await connection.enqueueJob(
                    job("a", key: "k"), schema: schema, logger: TestServer.logger)
                var pid: Int32 = 0
                for try await value in try await connection.query("SELECT pg_backend_pid()", logger: TestServer.logger)
                    .decode(Int32.self)
                { pid = value }
                let waiting = Task {
                    try await TestServer.withConnection { connection in
                        try await connection.withTransaction(logger: TestServer.logger) { connection in
                            try await connection.enqueueJob(
                                job("b", key: "k"), schema: schema, logger: TestServer.logger)
                        }
                    }
                }
                try await TestServer.waitUntilBlocked(by: pid, store: store)
                return (enqueued, waiting)
            }
        }
        let second = try await holder.1.value
        #expect(!holder.0.isDuplicate)
        #expect(second.isDuplicate && second.id == holder.0.id)
        #expect(try await store.jobs(state: nil, queue: nil, limit: 10).get().map(\.payload) == [Data("a".utf8)])
    }
}
