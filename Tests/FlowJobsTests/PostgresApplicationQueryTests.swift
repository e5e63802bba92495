import Flow
import FlowJobs
import FlowJobsPostgres
import Foundation
import Testing

/// What an application runs on the store's own connections: its SQL alone (`query`, `execute`) and
/// in a transaction with enqueues (`transaction`), against the real server.
@Suite("PostgresJobStore: the application's own queries", .enabled(if: PostgresTestDatabase.runsTests))
struct PostgresApplicationQueryTests {
    private static func job() -> NewJob {
        NewJob(name: "ship", queue: "default", payload: Data("{}".utf8), maxAttempts: 3)
    }

    /// A store on a fresh schema with the application's `orders` table in it.
    private static func storeWithOrders() throws -> PostgresJobStore {
        let store = try PostgresTestDatabase.openStore()
        try wait(store.execute("CREATE TABLE orders (id bigint PRIMARY KEY, note text)"))
        return store
    }

    private static func orderIDs(_ store: PostgresJobStore) throws -> [[SQLValue]] {
        try wait(store.query("SELECT id FROM orders ORDER BY id"))
    }

    @Test func theApplicationsWriteAndTheEnqueueCommitTogether() throws {
        let store = try Self.storeWithOrders()
        defer { store.close() }
        let enqueued = try wait(
            store.transaction { transaction in
                #expect(try transaction.execute("INSERT INTO orders (id, note) VALUES (?, ?)", [.integer(7), .text("a")]) == 1)
                return try transaction.enqueue(Self.job())
            })
        #expect(try Self.orderIDs(store) == [[.integer(7)]])
        #expect(try wait(store.job(enqueued.id))?.state == .available)
    }

    @Test func aTransactionThatThrowsLeavesNeitherTheApplicationsWriteNorTheJob() throws {
        struct Abandoned: Error {}
        let store = try Self.storeWithOrders()
        defer { store.close() }
        let enqueuedInside = Locked<JobID?>(nil)
        #expect(throws: Abandoned.self) {
            try wait(
                store.transaction { transaction in
                    try transaction.execute("INSERT INTO orders (id) VALUES (?)", [.integer(8)])
                    let enqueued = try transaction.enqueue(Self.job())
                    enqueuedInside.withLock { $0 = enqueued.id }
                    // Seen inside the transaction: both were written before it rolled back.
                    #expect(try transaction.query("SELECT count(*) FROM orders", []) == [[.integer(1)]])
                    throw Abandoned()
                })
        }
        let id = try #require(enqueuedInside.withLock { $0 })
        #expect(try Self.orderIDs(store).isEmpty)
        #expect(try wait(store.job(id)) == nil)
        #expect(try wait(store.jobs(state: nil, queue: nil, limit: 10)).isEmpty)
    }

    @Test func aStatementTheServerRefusesRollsBackTheEnqueueAndCarriesItsSQLState() throws {
        let store = try Self.storeWithOrders()
        defer { store.close() }
        try wait(store.execute("INSERT INTO orders (id) VALUES (?)", [.integer(7)]))
        do {
            try wait(
                store.transaction { transaction in
                    try transaction.enqueue(Self.job())
                    try transaction.execute("INSERT INTO orders (id) VALUES (?)", [.integer(7)])
                })
            Issue.record("a duplicate primary key was inserted")
        } catch let error as PostgresError {
            #expect(error.sqlState == "23505", "\(error)")
        }
        #expect(try wait(store.jobs(state: nil, queue: nil, limit: 10)).isEmpty)
        #expect(try Self.orderIDs(store) == [[.integer(7)]])
    }

    @Test func valuesAreBoundAsValuesNeverReadAsSQL() throws {
        let store = try Self.storeWithOrders()
        defer { store.close() }
        let hostile = "x'); DROP TABLE orders; --"
        #expect(try wait(store.execute("INSERT INTO orders (id, note) VALUES (?, ?)", [.integer(1), .text(hostile)])) == 1)
        // `$n` placeholders work too, and a `?` inside a string literal stays a character.
        let rows = try wait(store.query("SELECT note, '?' FROM orders WHERE note = $1", [.text(hostile)]))
        #expect(rows == [[.text(hostile), .text("?")]])
        #expect(try Self.orderIDs(store) == [[.integer(1)]])
    }

    @Test func rowsComeBackTypedByTheirColumnsAlsoAwaited() async throws {
        let store = try PostgresTestDatabase.openStore()
        defer { store.close() }
        let bytes = Data([0, 0x5C, 0xFF])
        let rows = try await store.query(
            "SELECT ?::bigint, ?::float8, ?::text, ?::bytea, ?::text, true, false, 3::smallint",
            [.integer(-5), .real(0.25), .text("é"), .blob(bytes), .null]
        ).get()
        #expect(rows == [[.integer(-5), .real(0.25), .text("é"), .blob(bytes), .null, .integer(1), .integer(0), .integer(3)]])
        #expect(try await store.execute("SELECT 1").get() == 1)
    }

    @Test func aRefusedQueryOutsideATransactionCarriesItsSQLStateAndTheStoreGoesOn() throws {
        let store = try PostgresTestDatabase.openStore()
        defer { store.close() }
        do {
            _ = try wait(store.query("SELECT * FROM no_such_table"))
            Issue.record("a missing table answered")
        } catch let error as PostgresError {
            #expect(error.sqlState == "42P01", "\(error)")
            #expect("\(error)".contains("SQLSTATE 42P01"))
        }
        #expect(PostgresError.closed.sqlState == nil)
        #expect(try wait(store.query("SELECT ?::int + 1", [.integer(1)])) == [[.integer(2)]])
    }

    @Test func aWriteOutsideATransactionIsCommittedAtOnceAndSeenByAnotherStore() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let store = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            store.close()
            other.close()
        }
        try wait(store.execute("CREATE TABLE orders (id bigint PRIMARY KEY, note text)"))
        try wait(store.execute("INSERT INTO orders (id) VALUES (?)", [.integer(3)]))
        #expect(try Self.orderIDs(other) == [[.integer(3)]])
    }
}
