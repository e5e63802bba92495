import CSQLite
import Dispatch
import Flow
import FlowJobs
import FlowTestSupport
import FlowTimers
import Foundation
import Synchronization
import Testing

/// A raw sqlite3 connection of the test's own, to play another process.
private final class OtherConnection {
    let handle: OpaquePointer

    init(_ path: String) throws {
        var opened: OpaquePointer?
        guard sqlite3_open(path, &opened) == SQLITE_OK, let opened else { throw TestFailure() }
        handle = opened
    }

    @discardableResult
    func run(_ sql: String) -> Int32 { sqlite3_exec(handle, sql, nil, nil, nil) }

    func text(_ sql: String) -> String? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { return nil }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else { return nil }
        return String(cString: text)
    }

    /// The detail column of each row `EXPLAIN QUERY PLAN` gives for `sql`.
    func queryPlan(_ sql: String) -> [String] {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "EXPLAIN QUERY PLAN " + sql, -1, &statement, nil) == SQLITE_OK else { return [] }
        defer { sqlite3_finalize(statement) }
        var details: [String] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            if let text = sqlite3_column_text(statement, 3) { details.append(String(cString: text)) }
        }
        return details
    }

    deinit { sqlite3_close(handle) }
}

private let job = NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 1)

@Suite("SQLiteJobStore: files, schema, locks and bad input")
struct SQLiteJobStoreTests {
    @Test func jobsSurviveClosingAndReopeningTheFile() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let first = try SQLiteJobStore(path: path)
        let enqueued = try await first.enqueue([job, job]).get()
        // Awaited: the second store's open runs its migrations in a write transaction, which must not
        // meet the first store's writer still finishing its close.
        try await first.close().get()
        await #expect(throws: JobStoreError.closed) { try await first.enqueue([job]).get() }
        let second = try SQLiteJobStore(path: path)
        #expect(try await second.jobs(state: nil, queue: nil, limit: 10).get().map(\.id) == enqueued.map(\.id))
    }

    @Test func closingTheStoreClosesEveryDescriptorOfItsFiles() async throws {
        let directory = TemporaryDirectory()
        let ownDescriptors = { openDescriptorTargets().filter { $0.hasPrefix(directory.url.path) }.count }
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        _ = try await store.enqueue([job]).get()
        #expect(ownDescriptors() > 0)
        try await store.close().get()
        #expect(ownDescriptors() == 0)
    }

    @Test func theDatabaseRunsInWALModeWithTheCurrentSchemaVersion() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(path: path)
        let other = try OtherConnection(path)
        #expect(other.text("PRAGMA journal_mode") == "wal")
        #expect(other.text("PRAGMA user_version") == "6")
        store.close()
    }

    @Test func anOlderSchemaIsMigratedOnOpenKeepingItsJobs() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let first = try SQLiteJobStore(path: path)
        let kept = try await first.enqueue([job]).get()
        try await first.close().get()
        do {
            // Back to schema version 1, as an older FlowJobs left it.
            let other = try OtherConnection(path)
            #expect(other.run(
                """
                DROP TABLE flow_schedules; DROP TABLE flow_schedule_ticks;
                DROP TABLE flow_queues; ALTER TABLE flow_jobs DROP COLUMN trace_context;
                ALTER TABLE flow_jobs DROP COLUMN first_attempt_trace_context;
                ALTER TABLE flow_jobs DROP COLUMN timeout_ms; PRAGMA user_version = 1
                """) == SQLITE_OK)
        }
        let migrated = try SQLiteJobStore(path: path)
        #expect(try await migrated.jobs(state: nil, queue: nil, limit: 10).get().map(\.id) == kept.map(\.id))
        try await migrated.setConcurrencyLimit(1, forQueue: "default").get()
        try await migrated.close().get()
        let other = try OtherConnection(path)
        #expect(other.text("PRAGMA user_version") == "6")
        #expect(other.text("SELECT max_running FROM flow_queues WHERE name = 'default'") == "1")
    }

    @Test func aVersion5DatabaseIsRebuiltOnOpenKeepingItsJobsIdsAndUniqueKeys() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        do {
            // The jobs table and its indexes as schema version 5 left them, with the other tables.
            let other = try OtherConnection(path)
            #expect(other.run(
                """
                PRAGMA journal_mode = WAL;
                CREATE TABLE flow_jobs (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, queue TEXT NOT NULL,
                    payload BLOB NOT NULL,
                    state TEXT NOT NULL CHECK (state IN
                        ('scheduled', 'available', 'running', 'completed', 'retryable', 'discarded', 'cancelled',
                         'quarantined')),
                    priority INTEGER NOT NULL, run_at INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,
                    max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1), fence INTEGER NOT NULL DEFAULT 0,
                    lease_expires_at INTEGER, worker TEXT, lease_expiries INTEGER NOT NULL DEFAULT 0,
                    unique_key TEXT, last_error TEXT, has_error INTEGER NOT NULL DEFAULT 0,
                    cancel_requested INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, finished_at INTEGER,
                    trace_context TEXT, first_attempt_trace_context TEXT, timeout_ms INTEGER);
                CREATE INDEX flow_jobs_due ON flow_jobs (queue, state, priority DESC, run_at, id);
                CREATE INDEX flow_jobs_leases ON flow_jobs (state, lease_expires_at);
                CREATE UNIQUE INDEX flow_jobs_unique_key ON flow_jobs (unique_key)
                    WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retryable');
                CREATE TABLE flow_queues (name TEXT PRIMARY KEY, max_running INTEGER NOT NULL CHECK (max_running >= 1));
                CREATE TABLE flow_schedules (
                    name TEXT PRIMARY KEY, description TEXT NOT NULL, last_fired_at INTEGER, next_fire_at INTEGER,
                    paused INTEGER NOT NULL DEFAULT 0, last_job_id INTEGER, deferred_fire_at INTEGER,
                    created_at INTEGER NOT NULL);
                CREATE TABLE flow_schedule_ticks (
                    schedule TEXT NOT NULL, fire_at INTEGER NOT NULL,
                    outcome TEXT NOT NULL CHECK (outcome IN ('enqueued', 'skipped', 'deferred')),
                    job_id INTEGER, recorded_at INTEGER NOT NULL, PRIMARY KEY (schedule, fire_at)) WITHOUT ROWID;
                INSERT INTO flow_jobs (name, queue, payload, state, priority, run_at, max_attempts, created_at)
                    VALUES ('task', 'default', X'7B7D', 'available', 0, 0, 3, 0);
                INSERT INTO flow_jobs (
                    name, queue, payload, state, priority, run_at, attempt, max_attempts, fence, lease_expires_at,
                    worker, created_at)
                    VALUES ('task', 'default', X'7B7D', 'running', 0, 0, 1, 3, 1, 1, 'gone', 0);
                INSERT INTO flow_jobs (name, queue, payload, state, priority, run_at, max_attempts, unique_key, created_at)
                    VALUES ('task', 'default', X'7B7D', 'available', 0, 0, 3, 'k', 0);
                INSERT INTO flow_jobs (name, queue, payload, state, priority, run_at, max_attempts, created_at)
                    VALUES ('task', 'default', X'7B7D', 'completed', 0, 0, 3, 0);
                DELETE FROM flow_jobs WHERE id = 4;
                PRAGMA user_version = 5
                """) == SQLITE_OK)
        }
        let migrated = try SQLiteJobStore(path: path)
        let kept = try await migrated.jobs(state: nil, queue: nil, limit: 10).get()
        #expect(kept.map(\.id.rawValue) == [1, 2, 3])
        #expect(kept.map(\.state) == [.available, .running, .available])
        #expect(kept[1].worker == "gone" && kept[1].fence == 1 && kept[0].payload == Data("{}".utf8))
        // The unique key still answers its live job; a new job's id follows the purged job's.
        let keyed = NewJob(name: "task", queue: "default", payload: Data(), maxAttempts: 1, uniqueKey: "k")
        let enqueued = try await migrated.enqueue([keyed, job]).get()
        #expect(enqueued.map(\.id.rawValue) == [3, 5] && enqueued.map(\.isDuplicate) == [true, false])
        // The claim rescues the expired lease and takes the due jobs.
        let claimed = try await migrated.claim(
            ClaimRequest(
                slotsByQueue: ["default": 10], names: ["task"], worker: "after", leaseDuration: .seconds(15),
                maxLeaseExpiries: 3, measuresQueues: false, lookahead: .zero)
        ).get()
        #expect(claimed.rescued.map(\.id.rawValue) == [2])
        #expect(Set(claimed.jobs.map(\.id.rawValue)).isSuperset(of: [1, 3, 5]))
        try await migrated.close().get()
        let other = try OtherConnection(path)
        #expect(other.text("PRAGMA user_version") == "6")
        #expect(other.text("SELECT sql FROM sqlite_master WHERE name = 'flow_jobs_leases'")?.hasSuffix(
            "WHERE state = 'running'") == true)
        #expect(other.run("UPDATE flow_jobs SET state = 'lost' WHERE id = 1") == SQLITE_CONSTRAINT, "the state check holds")
    }

    @Test func theClaimTheRescueAndTheUniqueKeyLookupUseTheirIndexes() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(path: path)
        try await store.close().get()
        let other = try OtherConnection(path)
        // The store's statements (SQLiteJobStore's claim, insert and rescue).
        let claim = other.queryPlan(
            """
            UPDATE flow_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
                lease_expires_at = ?, worker = ?
            WHERE id IN (
                SELECT id FROM flow_jobs
                WHERE queue = ? AND state IN ('scheduled', 'available', 'retryable') AND run_at <= ? AND name IN (?)
                ORDER BY priority DESC, run_at, id LIMIT ?)
            """)
        #expect(claim.contains { $0.contains("USING INDEX flow_jobs_due") }, "\(claim)")
        let rescue = other.queryPlan(
            "SELECT id FROM flow_jobs WHERE state = 'running' AND lease_expires_at <= ?")
        #expect(rescue.contains { $0.contains("USING INDEX flow_jobs_leases") }, "\(rescue)")
        let nextLease = other.queryPlan(
            "SELECT MIN(lease_expires_at) FROM flow_jobs WHERE state = 'running' AND worker IS NOT ?")
        #expect(nextLease.contains { $0.contains("USING INDEX flow_jobs_leases") }, "\(nextLease)")
        let uniqueKey = other.queryPlan(
            """
            SELECT id, state FROM flow_jobs
            WHERE unique_key = ? AND state IN ('scheduled', 'available', 'running', 'retryable')
            """)
        #expect(uniqueKey.contains { $0.contains("USING INDEX flow_jobs_unique_key") }, "\(uniqueKey)")
    }

    @Test func aCloseThatComesWhileTheWriterRunsABatchClosesAfterTheRequestsQueuedBehindIt() throws {
        let store = try SQLiteJobStore.inMemory()
        let entered = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        let first = store.transaction { _ in
            entered.signal()
            released.wait()
        }
        expectSignal(entered, "the first transaction on the writer")
        // Both come while the writer is busy, so neither wakes it: its next turn takes them together.
        let second = store.enqueue([job])
        let closed = store.close()
        let didClose = DispatchSemaphore(value: 0), didEnqueue = DispatchSemaphore(value: 0)
        closed.onResult(on: .none) { _ in didClose.signal() }
        second.onResult(on: .none) { result in
            if case .success(let enqueued) = result, enqueued.count == 1 { didEnqueue.signal() }
        }
        released.signal()
        expectSignal(didEnqueue, "the enqueue queued with the close")
        expectSignal(didClose, "the store's close")
        _ = first
    }

    @Test func aMissingDirectoryIsACleanErrorAndAMissingFileCanBeRefused() throws {
        let directory = TemporaryDirectory()
        let nowhere = directory.path("no/such/dir/jobs.sqlite")
        #expect {
            _ = try SQLiteJobStore(path: nowhere)
        } throws: { error in
            if case JobStoreError.cannotOpen(let path, _) = error { return path == nowhere }
            return false
        }
        let missing = directory.path("missing.sqlite")
        #expect(throws: JobStoreError.self) {
            _ = try SQLiteJobStore(path: missing, configuration: .init(createsMissingFile: false))
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "refusing creates nothing")
    }

    @Test func aFileThatIsNotADatabaseIsReportedAsCorrupt() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("garbage.sqlite")
        try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteJobStore(path: path)
        } throws: { error in
            if case JobStoreError.corrupt = error { return true }
            return false
        }
    }

    @Test func aDatabaseFromANewerFlowJobsIsRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("future.sqlite")
        do {
            let other = try OtherConnection(path)
            other.run("PRAGMA user_version = 99")
        }
        #expect(throws: JobStoreError.newerSchema(found: 99, supported: 6)) {
            _ = try SQLiteJobStore(path: path)
        }
    }

    /// Root writes files whatever their permissions, but not immutable ones.
    private static let chattr = "/usr/bin/chattr"
    private static let canMakeReadOnly = geteuid() != 0 || FileManager.default.isExecutableFile(atPath: chattr)

    private static func setReadOnly(_ path: String, _ readOnly: Bool) throws {
        if geteuid() == 0 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: chattr)
            process.arguments = [readOnly ? "+i" : "-i", path]
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw TestFailure() }
        } else {
            try FileManager.default.setAttributes([.posixPermissions: readOnly ? 0o444 : 0o644], ofItemAtPath: path)
        }
    }

    @Test(.enabled(if: canMakeReadOnly, "needs chattr to make a file read-only for root"))
    func aReadOnlyFileIsRefusedAtOpen() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("readonly.sqlite")
        try await SQLiteJobStore(path: path).close().get()
        try Self.setReadOnly(path, true)
        defer { try? Self.setReadOnly(path, false) }
        #expect(throws: JobStoreError.readOnly(path: path)) { _ = try SQLiteJobStore(path: path) }
    }

    @Test func aDatabaseLockedByAnotherConnectionIsRetriedWithBackoffThenWritten() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        // The other connection lets go of the lock at the store's first retry, on the store's writer:
        // the retry then succeeds, however loaded the machine is.
        let other = Synchronization.Mutex(try OtherConnection(path))
        let retries = Synchronization.Mutex(0)
        let commitCode = Synchronization.Mutex<Int32?>(nil)
        let store = try SQLiteJobStore(
            path: path,
            configuration: .init(busyRetryLimit: 3, busyBackoff: .constant(0.001), onBusyRetry: { _ in
                if retries.withLock({ count in count += 1; return count }) == 1 {
                    let code = other.withLock { $0.run("COMMIT") }
                    commitCode.withLock { $0 = code }
                }
            }))
        #expect(other.withLock { $0.run("BEGIN IMMEDIATE") } == SQLITE_OK)
        let enqueued = try await store.enqueue([job]).get()
        #expect(enqueued.count == 1)
        #expect(retries.withLock { $0 } == 1, "one wait, then the write went through")
        #expect(commitCode.withLock { $0 } == SQLITE_OK)
        try await store.close().get()
    }

    @Test func aDatabaseLockedExclusivelyWhileOpeningFailsWithBusyAfterItsRetries() throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let other = try OtherConnection(path)
        #expect(other.run("CREATE TABLE unrelated (x); BEGIN EXCLUSIVE") == SQLITE_OK)
        let retries = Synchronization.Mutex(0)
        #expect {
            _ = try SQLiteJobStore(
                path: path,
                configuration: .init(busyRetryLimit: 2, busyBackoff: .constant(0.001), onBusyRetry: { _ in
                    retries.withLock { $0 += 1 }
                }))
        } throws: { error in
            if case JobStoreError.busy = error { return true }
            return false
        }
        #expect(retries.withLock { $0 } == 2)
        #expect(other.run("COMMIT") == SQLITE_OK)
        #expect(throws: Never.self) { try SQLiteJobStore(path: path).close() }
    }

    @Test func aDatabaseThatStaysLockedFailsWithBusyAndAddsNothing() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(
            path: path, configuration: .init(busyRetryLimit: 3, busyBackoff: .constant(0.001)))
        let other = try OtherConnection(path)
        #expect(other.run("BEGIN IMMEDIATE") == SQLITE_OK)
        await #expect {
            try await store.enqueue([job]).get()
        } throws: { error in
            if case JobStoreError.busy = error { return true }
            return false
        }
        #expect(other.run("COMMIT") == SQLITE_OK)
        #expect(try await store.jobs(state: nil, queue: nil, limit: 10).get().isEmpty)
        store.close()
    }

    /// Caps the database at the pages it has now, as a full disk would: a write that needs a new page
    /// fails with SQLITE_FULL. `nil` lifts the cap.
    private func capDatabaseSize(of store: SQLiteJobStore, atCurrentSize: Bool) async throws {
        try await store.transaction { transaction in
            let pages = try transaction.query("PRAGMA page_count", []).first?.first
            let limit = atCurrentSize ? pages ?? .integer(1) : SQLValue.integer(1_073_741_823)
            guard case .integer(let count) = limit else { return }
            _ = try transaction.query("PRAGMA max_page_count = \(count)", [])
        }.get()
    }

    @Test func anEnqueueOnAFullDiskFailsWithTheErrorAddsNothingAndTheStoreWorksOnceSpaceReturns() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(path: path)
        let first = try await store.enqueue([job]).get()[0]
        try await capDatabaseSize(of: store, atCurrentSize: true)
        // Overflow pages for the payload: more than the capped file holds.
        let large = NewJob(name: "task", queue: "default", payload: Data(count: 256 * 1024), maxAttempts: 1)
        await #expect(throws: JobStoreError.diskFull(path: path)) { try await store.enqueue([job, large]).get() }
        #expect(try await store.jobs(state: nil, queue: nil, limit: 10).get().map(\.id) == [first.id])

        try await capDatabaseSize(of: store, atCurrentSize: false)
        let later = try await store.enqueue([large]).get()
        let records = try await store.jobs(state: nil, queue: nil, limit: 10).get()
        #expect(records.map(\.id) == [first.id, later[0].id] && records[1].payload.count == 256 * 1024)
        try await store.close().get()
        // Reopened, the file holds exactly the jobs whose enqueues succeeded.
        let reopened = try SQLiteJobStore(path: path)
        #expect(try await reopened.jobs(state: nil, queue: nil, limit: 10).get().map(\.id) == [first.id, later[0].id])
        try await reopened.close().get()
    }

    @Test func aFullDiskFailsOnlyTheEnqueueThatNeededSpaceNotTheOthersOfItsCommit() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(path: path)
        _ = try await store.enqueue([job]).get()
        try await capDatabaseSize(of: store, atCurrentSize: true)
        // Hold the writer inside a transaction until both enqueues are queued: they then run in one batch.
        let holding = DispatchSemaphore(value: 0)
        let holdingStarted = DispatchSemaphore(value: 0)
        let held = store.transaction { _ in
            holdingStarted.signal()
            holding.wait()
        }
        holdingStarted.wait()
        let small = store.enqueue([job])
        let large = store.enqueue([NewJob(name: "task", queue: "default", payload: Data(count: 256 * 1024), maxAttempts: 1)])
        holding.signal()
        try await held.get()
        let smallJob = try await small.get()
        await #expect(throws: JobStoreError.diskFull(path: path)) { try await large.get() }
        let records = try await store.jobs(state: nil, queue: nil, limit: 10).get()
        #expect(records.count == 2 && records.last?.id == smallJob[0].id)
        try await store.close().get()
    }

    @Test func readsCompleteWhileTheWriterIsBusyInATransactionAndSeeTheLastCommit() async throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        let committed = try await store.enqueue([job]).get()[0]
        // The writer holds a transaction with an uncommitted job until the reads are done (or, should a
        // read wait behind it, until the hang guard lets it go, which the test then reports).
        let release = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        let released = Synchronization.Mutex(false)
        let held = store.transaction { transaction in
            try transaction.enqueue(job)
            holding.signal()
            release.wait()
        }
        holding.wait()
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(hangGuardSeconds)) {
            released.withLock { $0 = true }
            release.signal()
        }
        let one = try await store.job(committed.id).get()
        let all = try await store.jobs(state: nil, queue: nil, limit: 10).get()
        let counts = try await store.counts().get()
        #expect(released.withLock { !$0 }, "the reads completed while the writer's transaction was open")
        #expect(one?.id == committed.id && all.map(\.id) == [committed.id], "the uncommitted job is not seen")
        #expect(counts == [.available: 1])
        release.signal()
        try await held.get()
        #expect(try await store.counts().get() == [.available: 2])
        try await store.close().get()
        await #expect(throws: JobStoreError.closed) { try await store.job(committed.id).get() }
    }

    @Test func countsAreByStateInEveryQueueOrInOne() async throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        let later = NewJob(
            name: "task", queue: "other", payload: Data(), runAt: Date().addingTimeInterval(3600), maxAttempts: 1)
        let enqueued = try await store.enqueue([job, job, later]).get()
        #expect(try await store.cancel(enqueued[0].id).get() == .cancelled)
        #expect(try await store.counts().get() == [.available: 1, .cancelled: 1, .scheduled: 1])
        #expect(try await store.counts(queue: "other").get() == [.scheduled: 1])
        #expect(try await store.counts(queue: "none").get().isEmpty)
        let inMemory = try SQLiteJobStore.inMemory()
        _ = try await inMemory.enqueue([job]).get()
        #expect(try await inMemory.counts().get() == [.available: 1], "in memory, reads go through the writer")
        try await store.close().get()
    }

    @Test func aJobEnqueuedThroughTheCallersOwnConnectionExistsOnlyIfTheirTransactionCommits() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(path: path)
        let heard = Synchronization.Mutex<[JobStoreNotification]>([])
        let observation = store.observe { notification in heard.withLock { $0.append(notification) } }
        defer { observation.dispose() }
        let own = try OtherConnection(path)
        #expect(own.run("CREATE TABLE orders (id INTEGER PRIMARY KEY)") == SQLITE_OK)

        #expect(own.run("BEGIN IMMEDIATE") == SQLITE_OK)
        own.run("INSERT INTO orders VALUES (1)")
        try store.enqueue(job, inTransactionOf: own.handle)
        #expect(own.run("ROLLBACK") == SQLITE_OK)
        #expect(try await store.jobs(state: nil, queue: nil, limit: 10).get().isEmpty)

        #expect(own.run("BEGIN IMMEDIATE") == SQLITE_OK)
        own.run("INSERT INTO orders VALUES (2)")
        let enqueued = try store.enqueue(job, inTransactionOf: own.handle)
        #expect(own.run("COMMIT") == SQLITE_OK)
        store.didCommitEnqueues(inQueues: ["default"])
        let records = try await store.jobs(state: nil, queue: nil, limit: 10).get()
        #expect(records.map(\.id) == [enqueued.id] && records[0].state == .available)
        #expect(own.text("SELECT group_concat(id) FROM orders") == "2")
        // didCommitEnqueues at once; the store's watch of its files may hear the commit too.
        let notifications = heard.withLock { $0 }.filter { $0 != .committedElsewhere }
        #expect(!notifications.isEmpty && notifications.allSatisfy { $0 == .enqueued(queues: ["default"]) })
        try await store.close().get()
    }

    @Test func aPayloadThatCannotBeEncodedFailsTheEnqueueAndAddsNothing() async throws {
        struct Unencodable: Codable, Sendable {
            func encode(to encoder: any Encoder) throws { throw TestFailure() }
            init() {}
            init(from decoder: any Decoder) throws { throw TestFailure() }
        }
        let store = try SQLiteJobStore.inMemory()
        let client = JobClient(store: store)
        await #expect(throws: TestFailure.self) {
            try await client.enqueue(JobKind<Unencodable>(name: "bad"), Unencodable()).get()
        }
        #expect(try await store.jobs(state: nil, queue: nil, limit: 10).get().isEmpty)
    }

    @Test func aHandleOfAnUnknownJobSaysSo() async throws {
        let store = try SQLiteJobStore.inMemory()
        let client = JobClient(store: store)
        await #expect(throws: JobHandleError.notFound(JobID(rawValue: 77))) {
            try await client.handle(for: JobID(rawValue: 77)).finished().get()
        }
    }
}
