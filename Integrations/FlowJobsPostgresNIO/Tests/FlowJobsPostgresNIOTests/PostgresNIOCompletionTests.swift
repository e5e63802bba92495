import Flow
import FlowJobs
import FlowJobsPostgres
import FlowJobsPostgresNIO
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

/// What a worker reported and its handlers saw, for the assertions after its shutdown.
final class WorkerReport: Sendable {
    let events = Mutex<[JobWorkerEvent]>([])
    /// The events as they come, for a test that waits for one.
    let stream: AsyncStream<JobWorkerEvent>
    private let continuation: AsyncStream<JobWorkerEvent>.Continuation
    let attempts = Mutex<Int>(0)
    /// What each handler saw of its own job right after its transaction ended, from the store.
    let stateAfterTransaction = Mutex<JobState?>(nil)
    /// The error that ended the handler's transaction, if any.
    let transactionError = Mutex<(any Error)?>(nil)

    init() { (stream, continuation) = AsyncStream.makeStream() }

    func record(_ event: JobWorkerEvent) {
        events.withLock { $0.append(event) }
        continuation.yield(event)
    }

    var finished: [JobRecord] {
        events.withLock { $0.compactMap { if case .attemptFinished(let record) = $0 { record } else { nil } } }
    }
    var lostLeases: [JobLease] {
        events.withLock { $0.compactMap { if case .leaseLost(let lease) = $0 { lease } else { nil } } }
    }
    var storeFailures: [String] {
        events.withLock { $0.compactMap { if case .storeFailed(let message) = $0 { message } else { nil } } }
    }
}

@Suite(
    "FlowJobsPostgresNIO: jobs completed in a postgres-nio transaction", .enabled(if: TestServer.runsTests),
    .timeLimit(.minutes(1)))
struct PostgresNIOCompletionTests {
    /// A job that charges an order: the charge and the completion commit together.
    struct Charge: Codable, Sendable {
        let order: Int
    }

    let kind = JobKind<Charge>(name: "charge", maxAttempts: 1)

    /// A store on a fresh schema with a `charges` table, and a worker on it that runs `handler`.
    func startWorker(
        heartbeatInterval: Duration? = nil,
        handler: @escaping @Sendable (Charge, JobContext, PostgresJobStore, String, WorkerReport) async throws -> Void
    ) async throws -> (store: PostgresJobStore, worker: JobWorker, schema: String, report: WorkerReport) {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        _ = try await store.execute("CREATE TABLE charges (order_id bigint PRIMARY KEY)").get()
        let report = WorkerReport()
        let worker = JobWorker(
            store: store, scheduler: TestServer.loop.scheduler,
            configuration: .init(
                concurrencyByQueue: ["default": 1], heartbeatInterval: heartbeatInterval,
                onEvent: { event in report.record(event) }))
        worker.register(kind) { charge, context async throws in
            report.attempts.withLock { $0 += 1 }
            try await handler(charge, context, store, schema, report)
        }
        TestServer.loop.performAndWait { worker.start() }
        return (store, worker, schema, report)
    }

    /// Inserts the order's charge and completes the job in one postgres-nio transaction; `beforeCommit`
    /// runs last inside it. What ended the transaction, and the job's state then, go to `report`.
    static func chargeAndComplete(
        _ charge: Charge, _ context: JobContext, store: PostgresJobStore, schema: String, report: WorkerReport,
        beforeCommit: @escaping @Sendable (PostgresConnection) async throws -> Void = { _ in }
    ) async throws {
        do {
            try await TestServer.withConnection { connection in
                try await connection.withTransaction(logger: TestServer.logger) { connection in
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "INSERT INTO \(schema).charges (order_id) VALUES (\(charge.order))"),
                        logger: TestServer.logger)
                    try await connection.completeJob(context, schema: schema, logger: TestServer.logger)
                    try await beforeCommit(connection)
                }
            }
        } catch {
            report.transactionError.withLock { $0 = error }
            report.stateAfterTransaction.withLock { $0 = nil }
            let state = try await store.job(context.id).get()?.state
            report.stateAfterTransaction.withLock { $0 = state }
            throw error
        }
        let state = try await store.job(context.id).get()?.state
        report.stateAfterTransaction.withLock { $0 = state }
    }

    @Test func theChargeAndTheCompletionCommitTogetherAndTheWorkerDoesNotCompleteAgain() async throws {
        let (store, worker, _, report) = try await startWorker { charge, context, store, schema, report in
            try await Self.chargeAndComplete(charge, context, store: store, schema: schema, report: report)
        }
        defer { store.close() }
        let job = try await JobClient(store: store).enqueue(kind, Charge(order: 7)).get()
        let finished = try await JobClient(store: store).handle(for: job.id).finished().get()
        try await worker.shutdown(gracePeriod: .seconds(5)).get()

        #expect(finished.state == .completed && finished.attempt == 1)
        #expect(report.stateAfterTransaction.withLock { $0 } == .completed)
        #expect(try await store.query("SELECT order_id FROM charges").get() == [[.integer(7)]])
        // The worker reported the attempt's end once, as completed, from the record the handler's
        // transaction wrote: no second completion, no lost lease, no failure.
        #expect(report.finished.map(\.id) == [job.id])
        #expect(report.finished.first?.state == .completed && report.finished.first?.fence == finished.fence)
        #expect(report.lostLeases.isEmpty && report.storeFailures.isEmpty, "\(report.events.withLock { $0 })")
        #expect(
            try await store.query("SELECT count(*) FROM flow_jobs_history WHERE id = $1", [.integer(job.id.rawValue)])
                .get() == [[.integer(1)]])
        #expect(report.attempts.withLock { $0 } == 1)
    }

    @Test func aTransactionThatRollsBackLeavesTheJobRunningAndTheWorkerRecordsTheHandlersEnd() async throws {
        // The first handler swallows its transaction's error and returns: the worker completes the job
        // as for any handler that returns, and the charge is not there.
        let (store, worker, _, report) = try await startWorker { charge, context, store, schema, report in
            try? await Self.chargeAndComplete(charge, context, store: store, schema: schema, report: report) { _ in
                throw Abandoned()
            }
        }
        defer { store.close() }
        let job = try await JobClient(store: store).enqueue(kind, Charge(order: 8)).get()
        let finished = try await JobClient(store: store).handle(for: job.id).finished().get()
        try await worker.shutdown(gracePeriod: .seconds(5)).get()

        #expect(report.stateAfterTransaction.withLock { $0 } == .running)
        #expect(report.transactionError.withLock { ($0 as? PostgresTransactionError)?.closureError is Abandoned })
        #expect(finished.state == .completed && finished.attempt == 1)
        #expect(report.finished.map(\.state) == [.completed])
        #expect(report.lostLeases.isEmpty && report.storeFailures.isEmpty, "\(report.events.withLock { $0 })")
        #expect(try await store.query("SELECT count(*) FROM charges").get() == [[.integer(0)]])
    }

    @Test func aHandlerWhoseTransactionRolledBackAndThrowsFailsItsAttempt() async throws {
        let (store, worker, _, report) = try await startWorker { charge, context, store, schema, report in
            try await Self.chargeAndComplete(charge, context, store: store, schema: schema, report: report) { _ in
                throw Abandoned()
            }
        }
        defer { store.close() }
        let job = try await JobClient(store: store).enqueue(kind, Charge(order: 9)).get()
        let finished = try await JobClient(store: store).handle(for: job.id).finished().get()
        try await worker.shutdown(gracePeriod: .seconds(5)).get()

        #expect(report.stateAfterTransaction.withLock { $0 } == .running)
        // One attempt allowed: the failed attempt discards the job, with the handler's error.
        #expect(finished.state == .discarded && finished.attempt == 1)
        #expect(finished.lastError?.contains("Abandoned") == true, "\(finished.lastError ?? "")")
        #expect(report.finished.map(\.state) == [.discarded])
        #expect(report.lostLeases.isEmpty && report.storeFailures.isEmpty, "\(report.events.withLock { $0 })")
        #expect(try await store.query("SELECT count(*) FROM charges").get() == [[.integer(0)]])
    }

    @Test func aCompletionWhoseLeaseWasLostThrowsAndRollsTheChargeBack() async throws {
        let (store, worker, _, report) = try await startWorker { charge, context, store, schema, report in
            // Another attempt took the job meanwhile: its fence moved on, as a rescue and a new claim
            // move it.
            _ = try await store.execute(
                "UPDATE flow_jobs SET fence = fence + 1 WHERE id = $1", [.integer(context.id.rawValue)]
            ).get()
            try await Self.chargeAndComplete(charge, context, store: store, schema: schema, report: report)
        }
        defer { store.close() }
        let job = try await JobClient(store: store).enqueue(kind, Charge(order: 10)).get()
        // The worker reports the lost lease when the handler's error reaches the store: its shutdown
        // waits for that write.
        for await event in report.stream {
            if case .leaseLost = event { break }
            if case .attemptFinished = event { break }
        }
        try await worker.shutdown(gracePeriod: .seconds(5)).get()

        let error = try #require(report.transactionError.withLock { $0 } as? PostgresTransactionError)
        let lost = try #require(error.closureError as? JobStoreError)
        guard case .leaseLost(let lease) = lost else {
            Issue.record("\(lost)")
            return
        }
        #expect(lease.id == job.id)
        #expect("\(lost)".contains("lease was lost"))
        #expect(report.stateAfterTransaction.withLock { $0 } == .running)
        #expect(try await store.query("SELECT count(*) FROM charges").get() == [[.integer(0)]])
        #expect(report.lostLeases.map(\.id) == [job.id] && report.finished.isEmpty)
        // The job is still running under the other attempt's fence: nothing completed it.
        let record = try #require(try await store.job(job.id).get())
        #expect(record.state == .running && record.fence == lease.fence + 1)
    }

    @Test func aHeartbeatWaitingOnTheCompletionDoesNotStopTheHandlerOrReportALostLease() async throws {
        let (store, worker, _, report) = try await startWorker(heartbeatInterval: .milliseconds(20)) {
            charge, context, store, schema, report in
            try await Self.chargeAndComplete(charge, context, store: store, schema: schema, report: report) {
                connection in
                // Commits only once the worker's heartbeat waits on the job's row, which this
                // transaction deleted: the heartbeat then finds the job gone.
                let backend = try await connection.query("SELECT pg_backend_pid()", logger: TestServer.logger)
                var pid: Int32 = 0
                for try await value in backend.decode(Int32.self) { pid = value }
                try await TestServer.waitUntilBlocked(by: pid, store: store)
            }
        }
        defer { store.close() }
        let job = try await JobClient(store: store).enqueue(kind, Charge(order: 11)).get()
        let finished = try await JobClient(store: store).handle(for: job.id).finished().get()
        try await worker.shutdown(gracePeriod: .seconds(5)).get()

        #expect(finished.state == .completed)
        #expect(report.stateAfterTransaction.withLock { $0 } == .completed)
        #expect(report.finished.map(\.state) == [.completed])
        #expect(report.lostLeases.isEmpty && report.storeFailures.isEmpty, "\(report.events.withLock { $0 })")
        #expect(try await store.query("SELECT order_id FROM charges").get() == [[.integer(11)]])
    }
}

extension TestServer {
    /// Returns once a session of the server waits for a lock that the backend `pid` holds: the
    /// server's own view of it, read again until it shows.
    static func waitUntilBlocked(by pid: Int32, store: PostgresJobStore) async throws {
        while try await store.query(
            "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", [.integer(Int64(pid))]
        ).get() == [[.integer(0)]] {
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
