import Dispatch
import Flow
import FlowJobs
@testable import FlowJobsPostgres
import FlowTestSupport
import Foundation
import Synchronization
import Testing

/// `url` with its password replaced, or its port.
private func changing(_ url: String, password: String? = nil, port: Int? = nil) throws -> String {
    var components = try #require(URLComponents(string: url))
    if let password { components.password = password }
    if let port { components.port = port }
    return try #require(components.string)
}

private func job(_ queue: String = "default") -> NewJob {
    NewJob(name: "task", queue: queue, payload: Data("{}".utf8), maxAttempts: 3)
}

/// Ends the server sessions of `store`'s schema whose current statement starts with `prefix`, from a
/// connection of `other`; waits until one such session exists (the statement has started).
private func terminateSessions(
    of schema: String, runningStatementStartingWith prefix: String, inState state: String? = nil,
    from other: PostgresJobStore
) throws {
    let matching = """
        FROM pg_stat_activity WHERE application_name = ? AND query LIKE ? AND pid <> pg_backend_pid()
            AND (?::text IS NULL OR state = ?)
        """
    let arguments: [SQLValue] = [
        .text("flow-jobs:" + schema), .text(prefix + "%"), state.map(SQLValue.text) ?? .null,
        state.map(SQLValue.text) ?? .null,
    ]
    let deadline = Date().addingTimeInterval(Double(hangGuardSeconds))
    while Date() < deadline {
        let found = try wait(other.transaction { try $0.query("SELECT count(*) " + matching, arguments) })
        if found.first?.first != .integer(0) { break }
        Thread.sleep(forTimeInterval: 0.01)  // Polls the server's own view of its sessions.
    }
    _ = try wait(other.transaction { try $0.query("SELECT pg_terminate_backend(pid) " + matching, arguments) })
}

@Suite("PostgresJobStore: connections, bad input and other processes", .enabled(if: PostgresTestDatabase.runsTests))
struct PostgresJobStoreTests {
    @Test func valuesOfEveryKindGoAndComeBackAsTheyWere() throws {
        let url = try PostgresTestDatabase.requireURL()
        let connection = try wait(PostgresConnection.connect(url, on: PostgresTestDatabase.loop))
        defer { connection.close() }
        let bytes = Data([0, 1, 0xFE, 0xFF, 0x5C, 0x78])
        let result = try wait(
            connection.query(
                "SELECT $1::bigint, $2::float8, $3::text, $4::bytea, $5::text, true",
                [.integer(-42), .real(2.5), .text("é'\"?"), .blob(bytes), .null]))
        #expect(result.rows == [[.integer(-42), .real(2.5), .text("é'\"?"), .blob(bytes), .null, .integer(1)]])
        // Statements queued at once are answered in the order sent.
        let answers = (1...20).map { number in connection.query("SELECT $1::int", [.integer(Int64(number))]) }
        #expect(try answers.map { try wait($0).rows } == (1...20).map { [[.integer(Int64($0))]] })
    }

    @Test func aRefusedStatementCarriesTheServersStateAndTheConnectionGoesOn() throws {
        let url = try PostgresTestDatabase.requireURL()
        let connection = try wait(PostgresConnection.connect(url, on: PostgresTestDatabase.loop))
        defer { connection.close() }
        #expect(throws: PostgresError.server(sqlState: "42P01", message: "relation \"no_such_table\" does not exist")) {
            try wait(connection.query("SELECT * FROM no_such_table WHERE 1 = $1", [.integer(1)]))
        }
        #expect(try wait(connection.query("SELECT 1")).rows == [[.integer(1)]])
    }

    @Test func placeholdersWrittenForSQLiteAreNumberedOutsideQuotes() {
        #expect(
            PostgresTransaction.numberingPlaceholders("SELECT '?', \"a?\" FROM t WHERE a = ? AND b = ? -- ?\n AND c = ?")
                == "SELECT '?', \"a?\" FROM t WHERE a = $1 AND b = $2 -- ?\n AND c = $3")
    }

    @Test func aWrongPasswordIsACannotConnectErrorSayingSo() throws {
        let url = try changing(PostgresTestDatabase.requireURL(), password: "not-the-password")
        try expectCannotConnect(to: url, saying: "password authentication failed")
    }

    @Test func aServerThatIsDownIsACannotConnectError() throws {
        let nobody = ReservedPort()
        try expectCannotConnect(to: changing(PostgresTestDatabase.requireURL(), port: nobody.port), saying: "refused")
    }

    /// Opening a store at `url` fails with `PostgresError.cannotConnect`, its message containing `reason`.
    private func expectCannotConnect(to url: String, saying reason: String) throws {
        do {
            _ = try PostgresTestDatabase.openStore(url: url)
            Issue.record("opened a store at \(url)")
        } catch let PostgresError.cannotConnect(message) {
            #expect(message.contains(reason), "\(message)")
        }
    }

    @Test func aSessionEndedMidStatementIsAConnectionLostErrorAndTheStoreGoesOn() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let store = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore()
        defer {
            store.close()
            other.close()
        }
        let sleeping = store.transaction { try $0.query("SELECT pg_sleep(60)", []) }
        try terminateSessions(of: schema, runningStatementStartingWith: "SELECT pg_sleep", from: other)
        do {
            _ = try wait(sleeping)
            Issue.record("the statement survived its session's end")
        } catch PostgresError.connectionLost(let message) {
            #expect(message.contains("terminat"), "\(message)")
        }
        // The pool opens a new connection: nothing written is lost, and new work goes on.
        let enqueued = try wait(store.enqueue([job()]))
        #expect(try wait(store.job(enqueued[0].id))?.state == .available)
    }

    @Test func aReadWhoseIdleConnectionWasEndedIsRetriedOnANewOne() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let store = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore()
        defer {
            store.close()
            other.close()
        }
        let enqueued = try wait(store.enqueue([job()]))
        try terminateSessions(of: schema, runningStatementStartingWith: "", from: other)
        #expect(try wait(store.job(enqueued[0].id))?.id == enqueued[0].id)
    }

    @Test func aDatabaseWithoutTheSchemaIsMigratedOnceByStoresOpeningTogether() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let url = try PostgresTestDatabase.requireURL()
        let opening = (0..<3).map { _ in
            PostgresJobStore.open(url: url, on: PostgresTestDatabase.loop, configuration: .init(schema: schema))
        }
        let stores = try opening.map { try wait($0) }
        defer { for store in stores { store.close() } }
        let versions = try wait(stores[0].transaction { try $0.query("SELECT version FROM flow_jobs_schema_version", []) })
        #expect(versions == [[.integer(Int64(PostgresSchema.currentVersion))]])
        let enqueued = try wait(stores[1].enqueue([job()]))
        #expect(try wait(stores[2].job(enqueued[0].id)) != nil, "the three share one schema")
    }

    @Test func aSchemaFromANewerVersionIsRefusedWithAClearError() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let store = try PostgresTestDatabase.openStore(schema: schema)
        try wait(store.transaction { try $0.execute("UPDATE flow_jobs_schema_version SET version = 99", []) })
        try wait(store.close())
        #expect(throws: JobStoreError.newerSchema(found: 99, supported: PostgresSchema.currentVersion)) {
            try PostgresTestDatabase.openStore(schema: schema)
        }
    }

    @Test func aStatementPastItsTimeoutFailsWithTheTimeoutsStateAndChangesNothing() throws {
        let store = try PostgresTestDatabase.openStore(statementTimeout: .milliseconds(50))
        defer { store.close() }
        do {
            try wait(
                store.transaction { transaction in
                    _ = try transaction.enqueue(job())
                    return try transaction.query("SELECT pg_sleep(5)", [])
                })
            Issue.record("the statement outlived its timeout")
        } catch let error as PostgresError {
            #expect(error.isStatementTimeout, "\(error)")
        }
        #expect(try wait(store.jobs(state: nil, queue: nil, limit: 10)).isEmpty, "the transaction rolled back")
        #expect(try wait(store.enqueue([job()])).count == 1, "the store goes on")
    }

    @Test func anIdleObserverHearsAnotherProcesssEnqueueAndCancellationRequest() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let listening = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            listening.close()
            other.close()
        }
        let heard = Synchronization.Mutex<[JobStoreNotification]>([])
        let heardSomething = DispatchSemaphore(value: 0)
        let observation = listening.observe { notification in
            heard.withLock { $0.append(notification) }
            heardSomething.signal()
        }
        defer { observation.dispose() }
        try waitUntilListening(listening, schema: schema, other: other, heardSomething: heardSomething)
        heard.withLock { $0.removeAll() }
        let enqueued = try wait(other.enqueue([job("mail")]))
        expectSignal(heardSomething, "the other store's enqueue")
        #expect(heard.withLock { $0 } == [.enqueued(queues: ["mail"])])
        _ = try wait(other.claim(ClaimRequest(slotsByQueue: ["mail": 1], names: ["task"], worker: "w", leaseDuration: .seconds(30), maxLeaseExpiries: 3)))
        #expect(try wait(other.cancel(enqueued[0].id)) == .requested)
        expectSignal(heardSomething, "the other store's cancellation request")
        #expect(heard.withLock { $0.last } == .cancellationRequested(enqueued[0].id))
    }

    @Test func aHandleHearsItsJobFinishedByAnotherProcesssStore() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let clientStore = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            clientStore.close()
            other.close()
        }
        let heardSomething = DispatchSemaphore(value: 0)
        let observation = clientStore.observe { _ in heardSomething.signal() }
        defer { observation.dispose() }
        try waitUntilListening(clientStore, schema: schema, other: other, heardSomething: heardSomething)
        let kind = JobKind<String>(name: "task")
        let handle = try wait(JobClient(store: clientStore).enqueue(kind, "done elsewhere"))
        let finished = handle.finished()
        let claimed = try wait(other.claim(
            ClaimRequest(slotsByQueue: ["default": 10], names: ["task"], worker: "other", leaseDuration: .seconds(30), maxLeaseExpiries: 3)))
        let record = try #require(claimed.jobs.first { $0.id == handle.id })
        _ = try wait(other.finish(JobLease(id: record.id, fence: record.fence), outcome: .completed, effects: nil))
        let ended = try wait(finished)
        #expect(ended.id == handle.id && ended.state == .completed && ended.worker == "other")
    }

    /// Enqueues from `other` until `listening`'s observer hears one: its `LISTEN` has taken effect.
    private func waitUntilListening(
        _ listening: PostgresJobStore, schema: String, other: PostgresJobStore, heardSomething: DispatchSemaphore
    ) throws {
        for _ in 0..<100 {
            _ = try wait(other.enqueue([job("warm-up")]))
            if heardSomething.wait(timeout: .now() + 0.1) == .success { return }
        }
        Issue.record("the observer never heard the other store")
    }

    @Test func afterItsListeningSessionIsEndedTheStoreListensAgainAndHearsWhatWasEnqueued() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let listening = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            listening.close()
            other.close()
        }
        let heardAfterLoss = DispatchSemaphore(value: 0)
        let heardSomething = DispatchSemaphore(value: 0)
        let observation = listening.observe { notification in
            if case .enqueued(let queues) = notification, queues.contains("after-loss") { heardAfterLoss.signal() }
            heardSomething.signal()
        }
        defer { observation.dispose() }
        try waitUntilListening(listening, schema: schema, other: other, heardSomething: heardSomething)
        try terminateSessions(of: schema, runningStatementStartingWith: "LISTEN", from: other)
        _ = try wait(other.enqueue([job("after-loss")]))
        expectSignal(heardAfterLoss, "the enqueue made while the listener was lost")
    }

    @Test func closingTheStoreFinishesEveryConnectionAndClosesEveryHandle() async throws {
        try await withCountedLoop("postgres.handles") { loop in
            let url = try PostgresTestDatabase.requireURL()
            let schema = PostgresTestDatabase.freshSchema()
            let store = try await PostgresJobStore.open(url: url, on: loop, configuration: .init(schema: schema)).get()
            let other = try PostgresTestDatabase.openStore(schema: schema)
            let heard = DispatchSemaphore(value: 0)
            let observation = store.observe { _ in heard.signal() }
            try waitUntilListening(store, schema: schema, other: other, heardSomething: heard)
            _ = try await store.enqueue((0..<10).map { _ in job() }).get()
            _ = try await store.claim(
                ClaimRequest(slotsByQueue: ["default": 10], names: ["task"], worker: "w", leaseDuration: .seconds(30), maxLeaseExpiries: 3)
            ).get()
            #expect(store.openConnectionCount >= 2, "the pool's and the listener's")
            observation.dispose()
            try await store.close().get()
            try await other.close().get()
            #expect(store.openConnectionCount == 0)
        }
    }

    /// A store nobody observes (a process that only enqueues) holds no listening session, which the
    /// server would wake at each `NOTIFY`, its own ones included. The first observer opens it, and a
    /// claim made right after registering starts once its `LISTEN` took effect: another process's
    /// enqueue committed after the claim is heard.
    @Test func aStoreListensFromItsFirstObserverOnAndAClaimMadeThenHearsWhatFollows() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let store = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            store.close()
            other.close()
        }
        _ = try wait(store.enqueue([job()]))
        #expect(store.openConnectionCount == 1, "the pool's connection alone: nobody observes, nothing listens")
        let heard = DispatchSemaphore(value: 0)
        let observation = store.observe { notification in
            if case .enqueued(let queues) = notification, queues.contains("after-claim") { heard.signal() }
        }
        defer { observation.dispose() }
        let claimed = try wait(store.claim(
            ClaimRequest(slotsByQueue: ["default": 1], names: ["task"], worker: "w", leaseDuration: .seconds(30), maxLeaseExpiries: 3)))
        #expect(claimed.jobs.count == 1)
        _ = try wait(other.enqueue([job("after-claim")]))
        expectSignal(heard, "the other store's enqueue after the claim")
    }

    @Test func oneOfTwoProcessesLeadsAndTheOtherTakesOverWhenTheLeadersSessionEnds() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let first = try PostgresTestDatabase.openStore(schema: schema)
        let second = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            first.close()
            second.close()
        }
        let changes = Synchronization.Mutex<[(store: Int, isLeader: Bool)]>([])
        let changed = DispatchSemaphore(value: 0)
        let elections = [first, second].enumerated().map { index, store in
            store.electLeader(for: "test") { isLeader in
                changes.withLock { $0.append((index, isLeader)) }
                changed.signal()
            }
        }
        defer { for election in elections { election.stop() } }
        expectSignal(changed, "a leader")
        let leader = try #require(changes.withLock { $0.first })
        #expect(leader.isLeader && elections[leader.store].isLeader && !elections[1 - leader.store].isLeader)
        // The leader's session holds the lock and is idle; the other's waits for it.
        try terminateSessions(
            of: schema, runningStatementStartingWith: "SELECT pg_advisory_lock", inState: "idle", from: first)
        expectSignals(changed, count: 2, "the hand-over")
        let handOver = changes.withLock { $0.dropFirst().map { "\($0.store):\($0.isLeader)" } }
        #expect(Set(handOver) == ["\(leader.store):false", "\(1 - leader.store):true"])
        #expect(elections[1 - leader.store].isLeader && !elections[leader.store].isLeader)
    }

    @Test func aLeaderPausedPastTheEndOfItsSessionDoesNotActWhenItWakes() throws {
        let url = try PostgresTestDatabase.requireURL()
        let schema = PostgresTestDatabase.freshSchema()
        // The first store's loop is its own, so that it can be paused as a stopped process would be.
        let pausableLoop = EventLoop.startOnNewThread(name: "flow.jobs.postgres-tests.paused-leader")
        defer { pausableLoop.shutdown() }
        let first = try wait(
            PostgresJobStore.open(
                url: url, on: pausableLoop, configuration: .init(schema: schema, safetyPollInterval: nil)))
        let second = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            first.close()
            second.close()
        }
        try wait(second.transaction { try $0.execute("CREATE TABLE leader_actions (leader TEXT NOT NULL)", []) })
        let firstLeads = DispatchSemaphore(value: 0)
        let firstFollows = DispatchSemaphore(value: 0)
        let secondLeads = DispatchSemaphore(value: 0)
        let firstElection = first.electLeader(for: "test") { isLeader in
            (isLeader ? firstLeads : firstFollows).signal()
        }
        defer { firstElection.stop() }
        expectSignal(firstLeads, "the first store leads")
        let secondElection = second.electLeader(for: "test") { isLeader in if isLeader { secondLeads.signal() } }
        defer { secondElection.stop() }
        try wait(firstElection.transaction { try $0.execute("INSERT INTO leader_actions VALUES ('first')", []) })

        // The first store's loop stops: it reads nothing from its sockets and learns nothing.
        let paused = DispatchSemaphore(value: 0)
        let resume = DispatchSemaphore(value: 0)
        pausableLoop.execute {
            paused.signal()
            resume.wait()
        }
        expectSignal(paused, "the first store's loop paused")
        // Meanwhile its lock's session is ended (as an administrator, or TCP keepalives, end a stopped
        // process's) and the second store takes the lead and acts.
        _ = try wait(
            second.transaction {
                try $0.query(
                    """
                    SELECT pg_terminate_backend(locks.pid) FROM pg_locks AS locks
                        JOIN pg_stat_activity AS activity ON activity.pid = locks.pid
                    WHERE locks.locktype = 'advisory' AND locks.granted AND activity.application_name = ?
                    """, [.text("flow-jobs:" + schema)])
            })
        expectSignal(secondLeads, "the second store leads once the first's session ended")
        try wait(secondElection.transaction { try $0.execute("INSERT INTO leader_actions VALUES ('second')", []) })
        // The paused one still believes it leads, and asks to act as soon as it wakes.
        #expect(firstElection.isLeader)
        let late = firstElection.transaction { try $0.execute("INSERT INTO leader_actions VALUES ('first, late')", []) }
        resume.signal()

        #expect(throws: (any Error).self, "the paused leader's action after its session ended") { try wait(late) }
        expectSignal(firstFollows, "the first store learns that it lost the lead")
        #expect(!firstElection.isLeader && secondElection.isLeader)
        #expect(throws: PostgresNotLeaderError.self) {
            try wait(firstElection.transaction { try $0.execute("INSERT INTO leader_actions VALUES ('first, later')", []) })
        }
        let actions = try wait(second.transaction { try $0.query("SELECT leader FROM leader_actions ORDER BY leader", []) })
        #expect(actions == [[.text("first")], [.text("second")]])
    }

    @Test func theLeaderRescuesExpiredLeasesInQueuesNobodyClaimsFrom() throws {
        let wallClock = ManualWallClock()
        let store = try PostgresTestDatabase.openStore(clock: wallClock.jobClock)
        defer { store.close() }
        let enqueued = try wait(store.enqueue([job("abandoned")]))
        let claimed = try wait(
            store.claim(
                ClaimRequest(
                    slotsByQueue: ["abandoned": 1], names: ["task"], worker: "dead", leaseDuration: .seconds(5),
                    maxLeaseExpiries: 3)))
        #expect(claimed.jobs.map(\.id) == enqueued.map(\.id))
        wallClock.advance(by: 5)
        let rescued = DispatchSemaphore(value: 0)
        let observation = store.observe { notification in
            if case .enqueued(let queues) = notification, queues.contains("abandoned") { rescued.signal() }
        }
        defer { observation.dispose() }
        let rescuer = store.rescuesExpiredLeasesWhileLeading(every: .milliseconds(20), maxLeaseExpiries: 3)
        defer { rescuer.stop() }
        expectSignal(rescued, "the leader's rescue")
        let record = try #require(try wait(store.job(enqueued[0].id)))
        #expect(record.state == .retryable && record.lifecycle.leaseExpiries == 1 && record.leaseExpiresAt == nil)
    }

    @Test func theLeaderRescuesALeaseAsItEndsNotAnIntervalLater() throws {
        let wallClock = ManualWallClock()
        let store = try PostgresTestDatabase.openStore(clock: wallClock.jobClock)
        defer { store.close() }
        // Two dead workers' jobs: one lease ends before the leader's first round, the other 200 ms
        // after it, far within the leader's interval of an hour.
        var ids: [String: JobID] = [:]
        for (queue, lease) in [("first", Duration.milliseconds(100)), ("second", .milliseconds(300))] {
            let enqueued = try wait(store.enqueue([job(queue)]))
            let claimed = try wait(
                store.claim(
                    ClaimRequest(
                        slotsByQueue: [queue: 1], names: ["task"], worker: "dead", leaseDuration: lease,
                        maxLeaseExpiries: 3)))
            #expect(claimed.jobs.map(\.id) == enqueued.map(\.id))
            ids[queue] = enqueued[0].id
        }
        wallClock.advance(by: 0.1)
        let first = DispatchSemaphore(value: 0)
        let second = DispatchSemaphore(value: 0)
        let observation = store.observe { notification in
            guard case .enqueued(let queues) = notification else { return }
            if queues.contains("first") { first.signal() }
            if queues.contains("second") { second.signal() }
        }
        defer { observation.dispose() }
        let rescuer = store.rescuesExpiredLeasesWhileLeading(every: .seconds(3600), maxLeaseExpiries: 3)
        defer { rescuer.stop() }
        expectSignal(first, "the leader's first round")
        // The first round has seen the second lease running: its end, not the interval, is the next round.
        wallClock.advance(by: 0.2)
        expectSignal(second, "the leader's round at the second lease's end")
        let secondID = try #require(ids["second"])
        let record = try #require(try wait(store.job(secondID)))
        #expect(record.state == .retryable && record.lifecycle.leaseExpiries == 1)
    }

    @Test func anIdleWorkerOfAnotherProcessRunsEveryJobOnceWokenByItsNotification() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let clientStore = try PostgresTestDatabase.openStore(schema: schema)
        let workerStore = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            clientStore.close()
            workerStore.close()
        }
        let kind = JobKind<Message>(name: "message", maxAttempts: 3, backoff: .constant(1))
        let loop = PostgresTestDatabase.loop
        let runs = Synchronization.Mutex<[String]>([])
        let worker = JobWorker(
            store: workerStore, scheduler: loop.scheduler, configuration: .init(concurrencyByQueue: ["default": 4]))
        worker.register(kind) { payload, _ in
            runs.withLock { $0.append(payload.text) }
            return Future()
        }
        loop.performAndWait { worker.start() }
        defer { _ = try? wait(worker.shutdown(gracePeriod: .seconds(5))) }
        // The worker has nothing due and no timer: only the notification of the commit wakes it.
        let client = JobClient(store: clientStore)
        let handles = try (0..<20).map { index in try wait(client.enqueue(kind, Message(text: "\(index)"))) }
        // A handle hears of the end in the worker's process.
        let workerClient = JobClient(store: workerStore)
        let finished = try handles.map { try wait(workerClient.handle(for: $0.id).finished()) }
        #expect(finished.allSatisfy { $0.state == .completed && $0.attempt == 1 })
        #expect(runs.withLock { $0.sorted() } == (0..<20).map { "\($0)" }.sorted())
    }

    @Test func theSafetyPollReportsDueJobsWhoseNotificationNobodySent() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let listening = try PostgresTestDatabase.openStore(schema: schema, safetyPollInterval: .milliseconds(50))
        let other = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            listening.close()
            other.close()
        }
        let heard = DispatchSemaphore(value: 0)
        let observation = listening.observe { notification in
            if case .enqueued(let queues) = notification, queues.contains("silent") { heard.signal() }
        }
        defer { observation.dispose() }
        // Written behind the store's back: no NOTIFY goes with it.
        try wait(
            other.transaction { transaction in
                try transaction.execute(
                    """
                    INSERT INTO flow_jobs (name, queue, payload, state, priority, run_at, max_attempts, created_at)
                    VALUES ('task', 'silent', '', 'available', 0, 0, 1, 0)
                    """, [])
            })
        expectSignal(heard, "the safety poll's report")
    }

    @Test func aTransactionWhoseSessionEndsBetweenStatementsFailsAsLostAndLeavesNothing() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let store = try PostgresTestDatabase.openStore(schema: schema)
        let other = try PostgresTestDatabase.openStore()
        defer {
            store.close()
            other.close()
        }
        let outcome = Synchronization.Mutex<(any Error)?>(nil)
        do {
            try wait(
                store.transaction { transaction in
                    _ = try transaction.enqueue(job("lost"))
                    try terminateSessions(
                        of: schema, runningStatementStartingWith: "", inState: "idle in transaction", from: other)
                    return try transaction.query("SELECT 1", [])
                })
        } catch {
            outcome.withLock { $0 = error }
        }
        let error = try #require(outcome.withLock { $0 } as? PostgresError)
        guard case .connectionLost = error else {
            Issue.record("expected connectionLost, not \(error)")
            return
        }
        #expect(try wait(store.jobs(state: nil, queue: "lost", limit: 10)).isEmpty, "nothing of it committed")
    }

    @Test func aBatchWithoutUniqueKeysKeepsEveryFieldInOrderAndWakesOtherProcessesForEachQueue() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let wallClock = ManualWallClock()
        let store = try PostgresTestDatabase.openStore(clock: wallClock.jobClock, schema: schema)
        let listening = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            store.close()
            listening.close()
        }
        let heardQueues = Synchronization.Mutex<Set<String>>([])
        let heard = DispatchSemaphore(value: 0)
        let observation = listening.observe { notification in
            if case .enqueued(let queues) = notification {
                heardQueues.withLock { $0.formUnion(queues) }
                heard.signal()
            }
        }
        defer { observation.dispose() }
        let now = wallClock.jobClock.now()
        let jobs = [
            NewJob(
                name: "a", queue: "q\"1\\", payload: Data([0, 0x5C, 0x22, 0x7B, 0xFF]), priority: -3,
                runAt: now.addingTimeInterval(-5), maxAttempts: 2, traceContext: ["traceparent": "00-ab\"c-01"]),
            NewJob(name: "b", queue: "q2", payload: Data(), priority: 7, runAt: now.addingTimeInterval(60), maxAttempts: 9),
            NewJob(name: "c", queue: "q\"1\\", payload: Data("{}".utf8), maxAttempts: 1),
        ]
        let enqueued = try wait(store.enqueue(jobs))
        #expect(enqueued.map(\.state) == [.available, .scheduled, .available])
        #expect(enqueued.map(\.id) == enqueued.map(\.id).sorted() && Set(enqueued.map(\.id)).count == 3)
        for (job, added) in zip(jobs, enqueued) {
            let record = try #require(try wait(store.job(added.id)))
            #expect(record.name == job.name && record.queue == job.queue && record.payload == job.payload)
            #expect(record.priority == job.priority && record.lifecycle.maxAttempts == job.maxAttempts)
            #expect(record.runAt == (job.runAt ?? now) && record.createdAt == now && record.uniqueKey == nil)
            #expect(record.traceContext == job.traceContext)
        }
        while heardQueues.withLock({ $0 }) != ["q\"1\\", "q2"] {
            guard heard.wait(timeout: .now() + hangGuard) == .success else {
                Issue.record("heard only \(heardQueues.withLock { $0 })")
                return
            }
        }
    }

    /// One job goes as a statement of its own (plain parameters, not arrays): every field, each
    /// kind of state, and the notification of its queue, as the batch's.
    @Test func aSingleJobWithoutUniqueKeyKeepsEveryFieldAndWakesOtherProcesses() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let wallClock = ManualWallClock()
        let store = try PostgresTestDatabase.openStore(clock: wallClock.jobClock, schema: schema)
        let listening = try PostgresTestDatabase.openStore(schema: schema)
        defer {
            store.close()
            listening.close()
        }
        let heardQueues = Synchronization.Mutex<Set<String>>([])
        let heard = DispatchSemaphore(value: 0)
        let observation = listening.observe { notification in
            if case .enqueued(let queues) = notification {
                heardQueues.withLock { $0.formUnion(queues) }
                heard.signal()
            }
        }
        defer { observation.dispose() }
        _ = try wait(listening.job(JobID(rawValue: 0)))  // a read after observing waits for the LISTEN
        let now = wallClock.jobClock.now()
        let jobs = [
            NewJob(
                name: "a\"'", queue: "q\"1\\", payload: Data([0, 0x5C, 0x22, 0x7B, 0xFF]), priority: -3,
                runAt: now.addingTimeInterval(-5), maxAttempts: 2, traceContext: ["traceparent": "00-ab\"c-01"],
                timeout: .milliseconds(1500)),
            NewJob(name: "b", queue: "q2", payload: Data(), priority: 7, runAt: now.addingTimeInterval(60), maxAttempts: 9),
        ]
        for job in jobs {
            let enqueued = try #require(try wait(store.enqueue([job])).first)
            #expect(enqueued.state == (job.runAt! > now ? .scheduled : .available) && !enqueued.isDuplicate)
            let record = try #require(try wait(store.job(enqueued.id)))
            #expect(record.name == job.name && record.queue == job.queue && record.payload == job.payload)
            #expect(record.priority == job.priority && record.lifecycle.maxAttempts == job.maxAttempts)
            #expect(record.runAt == job.runAt && record.createdAt == now && record.uniqueKey == nil)
            #expect(record.traceContext == job.traceContext && record.timeout == job.timeout)
            #expect(record.state == enqueued.state)
        }
        while heardQueues.withLock({ $0 }) != ["q\"1\\", "q2"] {
            guard heard.wait(timeout: .now() + hangGuard) == .success else {
                Issue.record("heard only \(heardQueues.withLock { $0 })")
                return
            }
        }
    }

    @Test func claimsRacingFromTwoProcessesTakeEveryJobExactlyOnce() throws {
        let schema = PostgresTestDatabase.freshSchema()
        let stores = try (0..<2).map { _ in try PostgresTestDatabase.openStore(schema: schema) }
        defer { for store in stores { store.close() } }
        let enqueued = try wait(stores[0].enqueue((0..<200).map { _ in job() }))
        let claimed = Synchronization.Mutex<[JobID]>([])
        let claimers = DispatchGroup()
        for claimer in 0..<8 {
            claimers.enter()
            DispatchQueue.global().async {
                defer { claimers.leave() }
                let store = stores[claimer % 2]
                let request = ClaimRequest(
                    slotsByQueue: ["default": 7], names: ["task"], worker: "claimer-\(claimer)",
                    leaseDuration: .seconds(60), maxLeaseExpiries: 3)
                while let jobs = try? wait(store.claim(request)).jobs, !jobs.isEmpty {
                    claimed.withLock { $0 += jobs.map(\.id) }
                }
            }
        }
        #expect(claimers.wait(timeout: .now() + hangGuard) == .success)
        let ids = claimed.withLock { $0 }
        #expect(ids.count == 200, "a job was claimed twice or not at all")
        #expect(Set(ids) == Set(enqueued.map(\.id)))
    }
}
