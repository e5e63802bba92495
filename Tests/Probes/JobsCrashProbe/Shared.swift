import Flow
import FlowJobs
import FlowJobsPostgres
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A small, fast generator whose whole sequence follows from its seed (SplitMix64).
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What a crash-test job carries.
struct CrashJob: Codable, Sendable {
    /// How many attempts fail on purpose before one may succeed.
    var failTimes: Int
    /// How long an attempt works, in milliseconds.
    var workMilliseconds: Int
    /// The driver's number for the job: the rows of an enqueue whose answer was lost (the server
    /// crashed as it committed) are known by it.
    var number: Int
}

/// The crash test's one kind of job: many attempts allowed, since kills count as attempts; short
/// backoff, so that a failed attempt runs again well within the lease.
let crashJob = JobKind<CrashJob>(
    name: "crash-test", maxAttempts: 40, backoff: .exponential(initial: 0.05, maximum: 0.2, jitter: .none))

/// Where a worker kills itself when `FLOW_JOBS_CRASH_AT=<point>:<n>` names the point: at its n-th
/// occurrence.
enum CrashPoint: String, CaseIterable {
    /// Right after a claim commits, as the worker starts the claimed job (before its handler runs).
    case afterClaim
    /// Inside a handler, while it works.
    case inHandler
    /// After the handler's effect outside the database, inside the completion's transaction, before it commits.
    case beforeCompletionCommit
    /// At a running job's first heartbeat (give or take 3 ms): before, while or right after it is written.
    case duringHeartbeat
    /// During the graceful drain that SIGTERM starts.
    case duringDrain
}

/// The wall clock in milliseconds since 1970, which every process of the test shares.
func nowMilliseconds() -> Int64 {
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
}

/// An append-only log file: each line is one `write(2)` with `O_APPEND`, so lines of several
/// processes never interleave, and a line written before a SIGKILL is kept (it is in the kernel).
struct AppendLog: Sendable {
    let descriptor: Int32

    init(_ path: String) {
        descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        if descriptor < 0 {
            printError("JobsCrashProbe: cannot open \(path): \(String(cString: strerror(errno)))\n")
            exit(2)
        }
    }

    func append(_ line: String) {
        var bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

/// The environment variable that names the run's PostgreSQL database (a `postgresql://` URL), which
/// the controller sets for the driver and the workers; without it the run is on an SQLite file.
let postgresURLVariable = "FLOW_JOBS_CRASH_POSTGRES_URL"

/// The PostgreSQL schema of a run's tables, its own so that other tests on the server never see them.
let crashTestSchema = "flow_jobs_crash_test"

/// The files of one run, in its directory, and where its jobs are.
struct RunFiles {
    let directory: String
    /// The PostgreSQL database of the run, or `nil` for the SQLite file `database`.
    var postgresURL: String? { ProcessInfo.processInfo.environment[postgresURLVariable] }
    /// Whether this run's store is PostgreSQL.
    static var isPostgres: Bool { ProcessInfo.processInfo.environment[postgresURLVariable] != nil }
    var database: String { directory + "/jobs.sqlite" }
    /// The driver's acknowledged enqueues: `ack <id> <unique key or -> <duplicate 0/1>`.
    var acknowledgements: String { directory + "/acks.log" }
    /// Claims (`claim <job> <attempt> <pid> <ms> <run at ms>`), self-kills (`selfkill <pid> <ms> <point>`),
    /// kills (`kill <pid> <ms>`), lost leases (`leaselost <pid> <job>`), workers ready (`ready <pid> <ms>`,
    /// the store open and the worker started), sent SIGTERM (`term <pid> <ms>`) and drained (`exit <pid> <ms>`),
    /// and the server's crashes (`outage-start <ms>`, `outage-end <ms>`, once it accepts connections again).
    var events: String { directory + "/events.log" }
    /// The effect written outside the completion's transaction: `<job> <attempt> <pid>`.
    var outsideEffects: String { directory + "/outside.log" }
}

extension RunFiles {
    /// Opens the run's store, on the main loop: the PostgreSQL one when the run has a URL, else the
    /// SQLite file (which must exist).
    func openStore() throws -> any JobStore {
        guard let postgresURL else {
            return try SQLiteJobStore(path: database, configuration: .init(createsMissingFile: false))
        }
        // A process started while the server is down (the controller crashed it) waits for it.
        let deadline = nowMilliseconds() + 30_000
        while true {
            do {
                // As many connections as a worker runs jobs, so that its claims (which rescue) do not
                // wait behind its finishes for a connection.
                return try EventLoop.main.run(
                    until: PostgresJobStore.open(
                        url: postgresURL, on: .main, configuration: .init(schema: crashTestSchema, maxConnections: 17)))
            } catch let error as PostgresError where nowMilliseconds() < deadline {
                if case .server = error { throw error }
                usleep(100_000)
            }
        }
    }
}

/// Closes either kind of store (the protocol has no `close`).
func closing(_ store: any JobStore) -> Future<Void> {
    switch store {
    case let sqlite as SQLiteJobStore: sqlite.close()
    case let postgres as PostgresJobStore: postgres.close()
    default: Future(())
    }
}

/// Writes `text` to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}
