import Flow
import FlowJobs
import FlowJobsPostgres
import FlowJobsPostgresNIO
import Foundation
import Logging
import PostgresNIO
import Synchronization
import Testing

/// The PostgreSQL server of the tests: `FLOW_TEST_POSTGRES_URL`, as Scripts/postgres-test-cluster
/// prints it. Without it these tests are skipped, saying how to get them, except under CI (`CI` set),
/// where they fail: CI never skips them.
enum TestServer {
    static let url = ProcessInfo.processInfo.environment["FLOW_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let isCI = ProcessInfo.processInfo.environment["CI"] != nil

    /// Whether the tests run: with a server, or under CI (where they then fail).
    static var runsTests: Bool {
        if url == nil && !isCI { sayHowToRunOnce }
        return url != nil || isCI
    }

    private static let sayHowToRunOnce: Void = {
        print(
            "FlowJobsPostgresNIO tests skipped: FLOW_TEST_POSTGRES_URL is unset. Run Scripts/install-dependencies, "
                + "then eval \"$(Scripts/postgres-test-cluster start /tmp/flow-pg)\"")
    }()

    struct MissingServer: Error, CustomStringConvertible {
        var description: String {
            "CI is set but FLOW_TEST_POSTGRES_URL is not: .ci/run starts a cluster with Scripts/postgres-test-cluster"
        }
    }

    /// The loop that drives the test stores' libpq connections.
    static let loop = Flow.EventLoop.startOnNewThread(name: "flow.jobs.postgres-nio-tests")
    static let logger = Logger(label: "flow.jobs.postgres-nio-tests")

    static func requireURL() throws -> String {
        guard let url else { throw MissingServer() }
        return url
    }

    /// A schema no other test uses.
    static func freshSchema() -> String {
        "nio_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(24)
    }

    /// A FlowJobs store on `schema` (its migrations create the tables), on the Flow loop.
    static func openStore(schema: String) async throws -> PostgresJobStore {
        try await PostgresJobStore.open(
            url: requireURL(), on: loop, configuration: .init(schema: schema, safetyPollInterval: nil)
        ).get()
    }

    /// Runs `body` with a postgres-nio connection to the same server (on NIO's own loops), closed
    /// after it, whether it threw or not.
    @discardableResult
    static func withConnection<Value: Sendable>(
        _ body: (PostgresConnection) async throws -> Value
    ) async throws -> Value {
        let connection = try await connect()
        do {
            let value = try await body(connection)
            try await connection.close()
            return value
        } catch {
            try? await connection.close()
            throw error
        }
    }

    private static func connect() async throws -> PostgresConnection {
        let components = try #require(URLComponents(string: requireURL()))
        let configuration = PostgresConnection.Configuration(
            host: try #require(components.host), port: components.port ?? 5432,
            username: try #require(components.user), password: components.password,
            database: String(components.path.dropFirst()), tls: .disable)
        return try await PostgresConnection.connect(configuration: configuration, id: 1, logger: logger)
    }
}

struct Message: Codable, Sendable {
    let text: String
}

struct Abandoned: Error {}

@Suite(
    "FlowJobsPostgresNIO: jobs enqueued in a postgres-nio transaction", .enabled(if: TestServer.runsTests),
    .timeLimit(.minutes(1)))
struct PostgresNIOEnqueueTests {
    let kind = JobKind<Message>(name: "message", maxAttempts: 3, backoff: .constant(1))

    @Test func aJobEnqueuedInATransactionThatRollsBackNeverExists() async throws {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        defer { store.close() }
        _ = try await store.execute("CREATE TABLE orders (id bigint PRIMARY KEY)").get()

        let enqueuedInside = Mutex<EnqueuedJob?>(nil)
        do {
            try await TestServer.withConnection { connection in
                try await connection.withTransaction(logger: TestServer.logger) { connection in
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "INSERT INTO \(schema).orders (id) VALUES (7)"), logger: TestServer.logger)
                    let enqueued = try await connection.enqueueJob(
                        kind.newJob(Message(text: "never"), clock: .system), schema: schema, logger: TestServer.logger)
                    enqueuedInside.withLock { $0 = enqueued }
                    throw Abandoned()
                }
            }
            Issue.record("the transaction committed")
        } catch let error as PostgresTransactionError {
            #expect(error.closureError is Abandoned, "\(error)")
        }
        let enqueued = try #require(enqueuedInside.withLock { $0 })
        #expect(enqueued.state == .available && !enqueued.isDuplicate)
        #expect(try await store.job(enqueued.id).get() == nil)
        #expect(try await store.jobs(state: nil, queue: nil, limit: 10).get().isEmpty)
        #expect(try await store.query("SELECT count(*) FROM orders").get() == [[.integer(0)]])
    }

    @Test func aJobEnqueuedInATransactionThatCommitsRunsOnAFlowJobsWorkerWokenByItsNotification() async throws {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        defer { store.close() }
        _ = try await store.execute("CREATE TABLE orders (id bigint PRIMARY KEY)").get()
        let runs = Mutex<[String]>([])
        let worker = JobWorker(
            store: store, scheduler: TestServer.loop.scheduler, configuration: .init(concurrencyByQueue: ["default": 2]))
        worker.register(kind) { message, _ in
            runs.withLock { $0.append(message.text) }
            return Future()
        }
        TestServer.loop.performAndWait { worker.start() }
        // The worker's store has no safety poll and nothing is due: only the commit's NOTIFY wakes it.

        let kind = kind
        let enqueued = try await TestServer.withConnection { connection in
            try await connection.withTransaction(logger: TestServer.logger) { connection in
                try await connection.query(
                    PostgresQuery(unsafeSQL: "INSERT INTO \(schema).orders (id) VALUES (7)"), logger: TestServer.logger)
                return try await connection.enqueueJobs(
                    [
                        kind.newJob(Message(text: "first"), clock: .system),
                        kind.newJob(Message(text: "second"), clock: .system),
                    ],
                    schema: schema, logger: TestServer.logger)
            }
        }
        #expect(enqueued.count == 2 && enqueued[0].id.rawValue < enqueued[1].id.rawValue)
        let client = JobClient(store: store)
        for job in enqueued {
            let finished = try await client.handle(for: job.id).finished().get()
            #expect(finished.state == .completed && finished.attempt == 1 && finished.queue == "default")
        }
        #expect(runs.withLock { $0.sorted() } == ["first", "second"])
        #expect(try await store.query("SELECT id FROM orders").get() == [[.integer(7)]])
        try await worker.shutdown(gracePeriod: .seconds(5)).get()
    }

    @Test func theRowsAreTheStoresOwnEveryFieldKept() async throws {
        let schema = TestServer.freshSchema()
        let store = try await TestServer.openStore(schema: schema)
        defer { store.close() }
        let later = Date().addingTimeInterval(3600)
        let bytes = Data([0, 1, 0x5C, 0x78, 0xFF])
        let job = NewJob(
            name: "report", queue: "reports", payload: bytes, priority: 5, runAt: later, maxAttempts: 4,
            traceContext: ["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
            timeout: .seconds(30))
        let enqueued = try await TestServer.withConnection { connection in
            try await connection.withTransaction(logger: TestServer.logger) { connection in
                try await connection.enqueueJob(job, schema: schema, logger: TestServer.logger)
            }
        }
        #expect(enqueued.state == .scheduled)
        let record = try #require(try await store.job(enqueued.id).get())
        #expect(record.name == "report" && record.queue == "reports" && record.payload == bytes)
        #expect(record.priority == 5 && record.lifecycle.maxAttempts == 4 && record.state == .scheduled)
        #expect(abs(record.runAt.timeIntervalSince(later)) < 0.002)
        #expect(record.traceContext == job.traceContext)
        #expect(record.timeout == .seconds(30))
    }

    @Test func aSchemaWithoutTheStoresTablesIsRefusedWithItsSQLState() async throws {
        do {
            try await TestServer.withConnection { connection in
                try await connection.enqueueJob(
                    NewJob(name: "x", queue: "default", payload: Data(), maxAttempts: 1),
                    schema: TestServer.freshSchema(), logger: TestServer.logger)
            }
            Issue.record("a schema without tables took a job")
        } catch let error as PSQLError {
            #expect(error.serverInfo?[.sqlState] == "42P01", "\(String(reflecting: error))")
        }
    }
}
