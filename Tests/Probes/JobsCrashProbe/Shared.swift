import FlowJobs
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

/// The files of one run, in its directory.
struct RunFiles {
    let directory: String
    var database: String { directory + "/jobs.sqlite" }
    /// The driver's acknowledged enqueues: `ack <id> <unique key or -> <duplicate 0/1>`.
    var acknowledgements: String { directory + "/acks.log" }
    /// Claims (`claim <job> <attempt> <pid> <ms> <run at ms>`), self-kills (`selfkill <pid> <ms> <point>`),
    /// kills (`kill <pid> <ms>`) and lost leases (`leaselost <pid> <job>`).
    var events: String { directory + "/events.log" }
    /// The effect written outside the completion's transaction: `<job> <attempt> <pid>`.
    var outsideEffects: String { directory + "/outside.log" }
}

/// Writes `text` to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}
