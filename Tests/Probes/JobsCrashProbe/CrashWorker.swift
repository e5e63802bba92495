import Flow
import FlowJobs
import FlowJobsPostgres
import FlowSystem
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A worker process of the crash test: `worker <directory> <lease seconds> <concurrency>`, killing
/// itself at `FLOW_JOBS_CRASH_AT=<point>:<n>` if set.
enum CrashWorker {
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, let lease = Double(arguments[1]), let concurrency = Int(arguments[2]) else {
            printError("usage: JobsCrashProbe worker <directory> <lease seconds> <concurrency>\n")
            return 64
        }
        let files = RunFiles(directory: arguments[0])
        let events = AppendLog(files.events)
        let outside = AppendLog(files.outsideEffects)
        let trigger = CrashTrigger(ProcessInfo.processInfo.environment["FLOW_JOBS_CRASH_AT"], events: events)
        let base: any JobStore
        do {
            base = try files.openStore()
        } catch {
            printError("JobsCrashProbe worker: \(error)\n")
            return 1
        }
        let pid = getpid()
        let heartbeatInterval = lease / 4
        let worker = JobWorker(
            store: ClaimTracingStore(base, events: events), scheduler: EventLoop.main.scheduler,
            configuration: .init(
                concurrencyByQueue: [crashJob.queue: concurrency], leaseDuration: .milliseconds(Int64(lease * 1000)),
                heartbeatInterval: .milliseconds(Int64(heartbeatInterval * 1000)), maxLeaseExpiries: 10,
                identity: "worker-\(pid)",
                onEvent: { event in
                    switch event {
                    case .attemptStarted(let record):
                        // The worker starts its claimed jobs as the claim's commit completes.
                        events.append(
                            "claim \(record.id.rawValue) \(record.attempt) \(pid) \(nowMilliseconds()) "
                                + "\(Int64((record.runAt.timeIntervalSince1970 * 1000).rounded()))")
                        trigger.reached(.afterClaim)
                    case .leaseLost(let lease):
                        events.append("leaselost \(pid) \(lease.id.rawValue)")
                    default:
                        break
                    }
                }))
        worker.register(crashJob) { job, context in
            let id = context.id.rawValue
            let attempt = context.attempt
            return Future<Void>(on: EventLoop.main.scheduler) { completion in
                let bag = DisposeBag()
                if trigger.isArmed(.inHandler) {
                    bag += EventLoop.main.execute(after: Double(job.workMilliseconds) / 2000) {
                        trigger.reached(.inHandler)
                    }
                }
                // The worker armed this attempt's first heartbeat when it started it: a kill at the
                // same moment, give or take 3 ms, lands before, during or right after its write.
                if trigger.isArmed(.duringHeartbeat), Double(job.workMilliseconds) / 1000 > heartbeatInterval {
                    bag += EventLoop.main.execute(after: heartbeatInterval + Double.random(in: -0.003...0.003)) {
                        trigger.reached(.duringHeartbeat)
                    }
                }
                bag += EventLoop.main.execute(after: Double(job.workMilliseconds) / 1000) {
                    if attempt <= job.failTimes {
                        completion(.failure(CrashJobError(attempt: attempt)))
                        return
                    }
                    // The effect outside the database: at least once, at most once per attempt.
                    outside.append("\(id) \(attempt) \(pid)")
                    // The effect inside: once, in the transaction that completes the job.
                    context.addCompletionEffect { transaction in
                        try transaction.execute(
                            "INSERT INTO effects (job_id, attempt, pid) VALUES (?, ?, ?)",
                            [.integer(id), .integer(Int64(attempt)), .integer(Int64(pid))])
                        trigger.reached(.beforeCompletionCommit)
                    }
                    completion(.success(()))
                }
                return bag
            }
        }
        do {
            let signals = try SignalWatcher.watch([.terminate], on: .main) { _ in
                worker.shutdown(gracePeriod: .seconds(1)).onResult(on: .main) { _ in
                    events.append("exit \(pid) \(nowMilliseconds())")
                    exit(0)
                }
                if trigger.isArmed(.duringDrain) {
                    // Somewhere in the drain: while attempts finish, or as their jobs are given back.
                    _ = EventLoop.main.execute(after: Double.random(in: 0...1.1)) { trigger.reached(.duringDrain) }
                }
            }
            worker.start()
            // On PostgreSQL, one worker at a time also leads the rescue of expired leases, through the
            // server's crashes and the workers' kills.
            let rescuer = (base as? PostgresJobStore)?.rescuesExpiredLeasesWhileLeading(
                every: .milliseconds(Int64(lease * 500)), maxLeaseExpiries: 10)
            events.append("ready \(pid) \(nowMilliseconds())")
            // Jobs enqueued by the driver, another process, wake the worker through the store's watch
            // of the database's files (SQLite) or its LISTEN connection (PostgreSQL): nothing polls.
            try withExtendedLifetime((signals, rescuer)) { try EventLoop.main.run() }
        } catch {
            printError("JobsCrashProbe worker: \(error)\n")
            return 1
        }
        return 0
    }

}

/// The failure of a crash-test job's first attempts.
struct CrashJobError: Error, CustomStringConvertible {
    let attempt: Int
    var description: String { "attempt \(attempt) fails on purpose" }
}

/// Counts occurrences of the one armed crash point and SIGKILLs this process at the chosen one.
final class CrashTrigger: Sendable {
    private let point: CrashPoint?
    private let occurrence: Int
    private let seen = Mutex(0)
    private let events: AppendLog

    init(_ setting: String?, events: AppendLog) {
        self.events = events
        let parts = setting?.split(separator: ":") ?? []
        if parts.count == 2, let point = CrashPoint(rawValue: String(parts[0])), let occurrence = Int(parts[1]) {
            self.point = point
            self.occurrence = occurrence
        } else {
            point = nil
            occurrence = 0
        }
    }

    func isArmed(_ point: CrashPoint) -> Bool { self.point == point }

    /// Called at each occurrence of `point`: at the chosen one, logs and dies.
    func reached(_ point: CrashPoint) {
        guard point == self.point else { return }
        let count = seen.withLock { seen in
            seen += 1
            return seen
        }
        guard count == occurrence || point == .duringDrain else { return }
        events.append("selfkill \(getpid()) \(nowMilliseconds()) \(point.rawValue)")
        kill(getpid(), SIGKILL)
        while true { pause() }
    }
}
