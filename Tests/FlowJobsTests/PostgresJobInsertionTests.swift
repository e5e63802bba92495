import Dispatch
import Flow
import FlowJobs
@testable import FlowJobsPostgres
import FlowTestSupport
import Foundation
import Testing

/// The statement another PostgreSQL client runs to enqueue (FlowJobsPostgresNIO's): its tables named
/// with their schema, its rows and notification the store's own.
@Suite("PostgresJobInsertion: enqueueing from another client's transaction")
struct PostgresJobInsertionTests {
    @Test func theStoresTablesAreNamedInTheirSchemaAndNothingElseIs() {
        let sql = """
            INSERT INTO flow_jobs (name) SELECT 'flow_jobs', "flow_jobs", s.flow_jobs, $1, flow_queues.name
            FROM flow_jobs_history, unnest($2::text[])
            """
        #expect(
            PostgresSchema.qualifyingTables(of: sql, schema: "app_jobs") == """
                INSERT INTO "app_jobs".flow_jobs (name) SELECT 'flow_jobs', "flow_jobs", s.flow_jobs, $1, "app_jobs".flow_queues.name
                FROM "app_jobs".flow_jobs_history, unnest($2::text[])
                """)
    }

    @Test(.enabled(if: PostgresTestDatabase.runsTests))
    func runUnderAnotherSearchPathItEnqueuesAndWakesTheStoresListenerOnlyWhenCommitted() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let workers = try PostgresTestDatabase.openStore(schema: schema)
        let application = try PostgresTestDatabase.openStore()
        defer {
            workers.close()
            application.close()
        }
        let heard = DispatchSemaphore(value: 0)
        let queuesHeard = Locked<[Set<String>]>([])
        let observing = workers.observe { notification in
            guard case .enqueued(let queues) = notification else { return }
            queuesHeard.withLock { $0.append(queues) }
            heard.signal()
        }
        defer { observing.dispose() }
        let later = Date().addingTimeInterval(3600)
        let insertion = PostgresJobInsertion(
            jobs: [
                NewJob(name: "a", queue: "mail", payload: Data([1, 0x5C]), maxAttempts: 2),
                NewJob(name: "b", queue: "mail", payload: Data(), runAt: later, maxAttempts: 3),
            ],
            schema: schema)
        let run: @Sendable (any JobTransaction) throws -> [Int64] = { transaction in
            // Another application's session: its own search path, where no store tables are.
            try transaction.execute("SET LOCAL search_path TO public", [])
            return try transaction.query(insertion.sql, insertion.arguments).map { row in
                guard case .integer(let id) = row[0] else { throw PostgresError.server(sqlState: "", message: "\(row)") }
                return id
            }
        }

        struct Abandoned: Error {}
        #expect(throws: Abandoned.self) {
            try wait(
                application.transaction { transaction in
                    _ = try run(transaction)
                    throw Abandoned()
                })
        }
        let enqueued = insertion.enqueuedJobs(identifiers: try wait(application.transaction(run)))
        #expect(enqueued.map(\.state) == [.available, .scheduled])
        #expect(heard.wait(timeout: .now() + hangGuard) == .success)
        #expect(queuesHeard.withLock { $0 } == [["mail"]])
        let records = try wait(workers.jobs(state: nil, queue: nil, limit: 10))
        #expect(records.map(\.id) == enqueued.map(\.id))
        #expect(records.map(\.name) == ["a", "b"] && records[0].payload == Data([1, 0x5C]))
        #expect(records.map(\.state) == [.available, .scheduled])
    }
}
