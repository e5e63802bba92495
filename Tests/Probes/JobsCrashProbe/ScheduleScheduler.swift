import Flow
import FlowJobs
import FlowSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The schedule every scheduler process declares: a tick each second, each tick's job beside the previous
/// one's, and every missed tick caught up (so that, whatever the kills, every second of the run has a tick).
let probeScheduleName = "every-second"

/// The job each tick enqueues; the schedulers also run them, so that finished jobs leave the jobs' unique
/// index and only the tick records can keep a tick from being enqueued again.
let tickJob = JobKind<ProbeTick>(name: "probe-tick", queue: "ticks", maxAttempts: 5)

/// A tick job's payload.
struct ProbeTick: Codable, Sendable {}

/// A scheduler process of the schedules mode: `scheduler <directory>` (SQLite), or `scheduler --postgres
/// <url> <schema>`. It declares the schedule, runs its jobs, and runs until killed (or SIGTERM, which
/// drains it).
enum ScheduleScheduler {
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 1 || (arguments.count == 3 && arguments[0] == "--postgres") else {
            printError("usage: JobsCrashProbe scheduler <directory> | --postgres <url> <schema>\n")
            return 64
        }
        do {
            let store: any JobStore
            if arguments.count == 3 {
                store = try openPostgresStore(url: arguments[1], schema: arguments[2])
            } else {
                let files = RunFiles(directory: arguments[0])
                store = try SQLiteJobStore(path: files.database, configuration: .init(createsMissingFile: false))
            }
            let worker = JobWorker(
                store: store, scheduler: EventLoop.main.scheduler,
                configuration: .init(
                    concurrencyByQueue: [tickJob.queue: 8], leaseDuration: .seconds(2),
                    identity: "scheduler-\(getpid())"))
            worker.register(tickJob) { _, _ in Future(()) }
            try worker.schedule(
                probeScheduleName, try JobSchedule.every(.seconds(1)), job: tickJob, payload: ProbeTick(),
                overlap: .runAlongside, catchUp: .all(limit: 100_000))
            let signals = try SignalWatcher.watch([.terminate], on: .main) { _ in
                worker.shutdown(gracePeriod: .seconds(1)).onResult(on: .main) { _ in exit(0) }
            }
            worker.start()
            try withExtendedLifetime(signals) { try EventLoop.main.run() }
        } catch {
            printError("JobsCrashProbe scheduler: \(error)\n")
            return 1
        }
        return 0
    }
}

/// The schedules mode's controller: `schedules [--seed N] [--seconds S] [--postgres URL]`. Two scheduler
/// processes on one SQLite file (or one schema of a PostgreSQL database of their own), then three, each
/// SIGKILLed at random and restarted; most kills land within a few milliseconds after a whole second, while
/// the tick of that second is being enqueued. At the end, every tick from the first to the last has exactly
/// one job and one tick record.
enum ScheduleController {
    static func main(_ arguments: [String]) -> Int32 {
        var seed = UInt64(nowMilliseconds() % 1_000_000_000)
        var seconds = 24.0
        var postgresURL: String?
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            guard let value = remaining.popFirst() else { return usage() }
            switch option {
            case "--seed": guard let parsed = UInt64(value) else { return usage() }; seed = parsed
            case "--seconds": guard let parsed = Double(value), parsed >= 4 else { return usage() }; seconds = parsed
            case "--postgres": postgresURL = value
            default: return usage()
            }
        }
        let replay = postgresURL == nil ? "" : " --postgres URL"
        report(
            "schedules: seed \(seed) (replay: Scripts/jobs-crash-test --schedules\(replay) --seed \(seed)), "
                + "\(Int(seconds)) s on \(postgresURL == nil ? "SQLite" : "PostgreSQL")")
        var template = Array((FileManager.default.temporaryDirectory.path + "/flow-jobs-schedules-XXXXXX").utf8CString)
        guard let directory = template.withUnsafeMutableBufferPointer({ buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }) else {
            report("cannot make a temporary directory")
            return 2
        }
        let files = RunFiles(directory: directory)
        // PostgreSQL: a schema of the run's own, which the schedulers' stores share.
        let postgresSchema = "flow_probe_schedules_\(seed)_\(getpid())"
        let schedulerArguments =
            postgresURL.map { ["scheduler", "--postgres", $0, postgresSchema] } ?? ["scheduler", directory]
        do {
            if let postgresURL {
                try EventLoop.main.run(until: try openPostgresStore(url: postgresURL, schema: postgresSchema).close())
            } else {
                try EventLoop.main.run(until: try SQLiteJobStore(path: files.database).close())
            }
        } catch {
            report("cannot prepare the database: \(error)")
            return 2
        }
        var random = SeededGenerator(seed: seed)
        var kills = 0
        var processes: [Process] = []
        let start = nowMilliseconds()
        do {
            // The first half with two schedulers, the second with three.
            for (count, phaseEnd) in [(2, start + Int64(seconds * 500)), (3, start + Int64(seconds * 1000))] {
                while processes.count < count { processes.append(try Controller.spawn(schedulerArguments)) }
                var nextKillAt = nowMilliseconds() + Int64.random(in: 300...900, using: &random)
                while nowMilliseconds() < phaseEnd {
                    usleep(1000)
                    let now = nowMilliseconds()
                    for index in processes.indices where !processes[index].isRunning {
                        processes[index] = try Controller.spawn(schedulerArguments)
                    }
                    guard now >= nextKillAt else { continue }
                    let victim = processes.indices.randomElement(using: &random)!
                    kill(processes[victim].processIdentifier, SIGKILL)
                    processes[victim].waitUntilExit()
                    kills += 1
                    processes[victim] = try Controller.spawn(schedulerArguments)
                    // Mostly just after a whole second (a tick's enqueue), sometimes anywhere.
                    let target = now + Int64.random(in: 300...1200, using: &random)
                    nextKillAt =
                        Int.random(in: 0..<4, using: &random) == 0
                        ? target : (target / 1000) * 1000 + Int64.random(in: 0...12, using: &random)
                }
            }
        } catch {
            report("cannot start a scheduler: \(error)")
            return 2
        }
        let end = nowMilliseconds()
        // A graceful end: each scheduler drains (and is killed if it does not within 5 s).
        for process in processes where process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let stopDeadline = Date().addingTimeInterval(5)
        for process in processes {
            while process.isRunning && Date() < stopDeadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        report(String(format: "ran %.1f s with %d SIGKILLs", Double(end - start) / 1000, kills))
        if let postgresURL {
            let passed = checkPostgres(url: postgresURL, schema: postgresSchema, start: start, end: end)
            try? FileManager.default.removeItem(atPath: directory)
            if !passed { report("FAILED with seed \(seed); the run's schema \(postgresSchema) is kept") }
            return passed ? 0 : 1
        }
        guard let database = ReadOnlyDatabase(path: files.database), check(database, start: start, end: end) else {
            report("FAILED with seed \(seed); the run's files are kept in \(directory)")
            return 1
        }
        try? FileManager.default.removeItem(atPath: directory)
        return 0
    }

    static func usage() -> Int32 {
        printError("usage: JobsCrashProbe schedules [--seed N] [--seconds S] [--postgres URL]\n")
        return 64
    }

    /// Every tick from the first to the last has exactly one job, and a tick record naming it.
    static func check(_ database: ReadOnlyDatabase, start: Int64, end: Int64) -> Bool {
        guard case .success(let jobRows) = database.query(
            "SELECT unique_key, count(*), min(id) FROM flow_jobs WHERE name = '\(tickJob.name)' GROUP BY unique_key"),
            case .success(let tickRows) = database.query(
                "SELECT fire_at, outcome, job_id FROM flow_schedule_ticks WHERE schedule = '\(probeScheduleName)'")
        else {
            report("cannot read the database")
            return false
        }
        let unfinished = database.integer(
            "SELECT count(*) FROM flow_jobs WHERE name = '\(tickJob.name)' AND state <> 'completed'")
        return verify(jobRows: jobRows, tickRows: tickRows, unfinished: unfinished, start: start, end: end)
    }

    /// The checks of ``check(_:start:end:)`` on the rows read from a store: `jobRows` are (unique key, number
    /// of jobs, smallest job id) per key of the tick jobs, `tickRows` (fire time, outcome, job id) per tick row.
    static func verify(jobRows: [[String?]], tickRows: [[String?]], unfinished: Int, start: Int64, end: Int64) -> Bool {
        let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: probeScheduleName)
        var passed = true
        func fail(_ line: String) {
            report("CHECK FAILED: \(line)")
            passed = false
        }
        var jobByTick: [Int64: String] = [:]
        for row in jobRows {
            guard let key = row[0], key.hasPrefix(prefix), let tick = Int64(key.dropFirst(prefix.count)) else {
                fail("a tick job without its tick's unique key: \(row)")
                continue
            }
            if row[1] != "1" { fail("the tick at \(tick) has \(row[1] ?? "?") jobs") }
            jobByTick[tick] = row[2]
        }
        let ticks = jobByTick.keys.sorted()
        guard let first = ticks.first, let last = ticks.last else {
            fail("no tick fired")
            return false
        }
        let missing = stride(from: first, through: last, by: 1000).filter { jobByTick[$0] == nil }
        if !missing.isEmpty {
            fail("\(missing.count) ticks between the first and the last have no job: \(missing.prefix(5))")
        }
        if first > start + 5000 { fail("the first tick came \(first - start) ms after the start") }
        if last < end - 5000 { fail("the last tick came \(end - last) ms before the end") }
        var recorded = 0
        for row in tickRows {
            guard let fireAt = row[0].flatMap({ Int64($0) }) else { continue }
            recorded += 1
            if row[1] != "enqueued" || row[2] != jobByTick[fireAt] {
                fail("the tick record at \(fireAt) says \(row[1] ?? "?") job \(row[2] ?? "none"), not its job")
            }
        }
        if recorded != ticks.count { fail("\(recorded) tick records for \(ticks.count) tick jobs") }
        report("\(ticks.count) ticks over \((last - first) / 1000 + 1) s, each with one job; \(unfinished) not yet run")
        return passed
    }
}
