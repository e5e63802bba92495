import Dispatch
import Flow
import FlowJobs
import FlowJobsPostgres
import FlowTestSupport
import Foundation
import Synchronization
import Testing

/// The PostgreSQL server of the tests: `FLOW_TEST_POSTGRES_URL`, as Scripts/postgres-test-cluster
/// prints it. Without it the PostgreSQL tests are skipped, saying once how to get them, except under
/// CI (`CI` set), where they fail: CI never skips them.
enum PostgresTestDatabase {
    static let url = ProcessInfo.processInfo.environment["FLOW_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let isCI = ProcessInfo.processInfo.environment["CI"] != nil

    /// Whether the PostgreSQL tests run: with a server, or under CI (where they then fail).
    static var runsTests: Bool {
        if url == nil && !isCI { sayHowToRunOnce }
        return url != nil || isCI
    }

    private static let sayHowToRunOnce: Void = {
        print(
            "PostgreSQL tests skipped: FLOW_TEST_POSTGRES_URL is unset. Run Scripts/install-dependencies, then "
                + "eval \"$(Scripts/postgres-test-cluster start /tmp/flow-pg)\"")
    }()

    /// The loop that drives every test store's connections.
    static let loop = EventLoop.startOnNewThread(name: "flow.jobs.postgres-tests")

    /// The server's URL, or a failure naming what is missing.
    static func requireURL() throws -> String {
        guard let url else {
            throw MissingServer()
        }
        return url
    }

    struct MissingServer: Error, CustomStringConvertible {
        var description: String {
            "CI is set but FLOW_TEST_POSTGRES_URL is not: .ci/run starts a cluster with Scripts/postgres-test-cluster"
        }
    }

    /// A schema name no other test uses, so that each test sees only its own jobs.
    static func freshSchema() -> String {
        "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(24)
    }

    /// Opens a store on a fresh schema (or `schema`), waiting for it; with no safety poll unless
    /// asked, so that observers hear only what the tests do.
    static func openStore(
        clock: JobClock = .system, schema: String = freshSchema(), url: String? = nil,
        statementTimeout: Duration? = nil, safetyPollInterval: Duration? = nil
    ) throws -> PostgresJobStore {
        let url = try url ?? requireURL()
        return try wait(
            PostgresJobStore.open(
                url: url, on: loop,
                configuration: .init(
                    clock: clock, schema: schema, statementTimeout: statementTimeout,
                    safetyPollInterval: safetyPollInterval)))
    }

    /// The conformance suite's PostgreSQL entry, when the tests run.
    static var factories: [JobStoreFactory] {
        guard runsTests else { return [] }
        return [JobStoreFactory(testDescription: "PostgreSQL, fresh schema") { clock, _ in try openStore(clock: clock) }]
    }
}

/// Waits on the calling thread (not a loop's) for `future`'s result.
@discardableResult
func wait<Value>(_ future: Future<Value>) throws -> Value {
    let done = DispatchSemaphore(value: 0)
    let outcome = Synchronization.Mutex<Result<Value>?>(nil)
    let observed = future.onResult(on: .none) { result in
        outcome.withLock { $0 = result }
        done.signal()
    }
    guard done.wait(timeout: .now() + hangGuard) == .success else {
        observed.cancel()
        throw WaitTimedOut()
    }
    return try outcome.withLock { $0! }.get()
}

struct WaitTimedOut: Error {}
