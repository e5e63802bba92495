import Flow
import FlowJobs
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Prints a line of the controller's at once.
func report(_ line: String) {
    print("JobsCrashProbe: \(line)")
    fflush(nil)
}

/// The controller: prepares the database, starts the driver and the workers, kills and restarts
/// workers until every job has finished, then checks the outcome.
enum Controller {
    struct Settings {
        var seed = UInt64(nowMilliseconds() % 1_000_000_000)
        var jobs = 2000
        var lease = 2.0
        var workers = 3
        var concurrency = 16
        /// Kills stop after this long; the run then only waits for the last jobs.
        var chaosSeconds = 60.0
        var timeLimitSeconds = 150.0
        var keepsDirectory = false
    }

    static func parse(_ arguments: [String]) -> Settings? {
        var settings = Settings()
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            if option == "--keep" {
                settings.keepsDirectory = true
                continue
            }
            guard let value = remaining.popFirst() else { return nil }
            switch option {
            case "--seed": guard let seed = UInt64(value) else { return nil }; settings.seed = seed
            case "--jobs": guard let jobs = Int(value), jobs >= 1 else { return nil }; settings.jobs = jobs
            case "--lease": guard let lease = Double(value), lease > 0 else { return nil }; settings.lease = lease
            case "--chaos-seconds": guard let seconds = Double(value), seconds >= 0 else { return nil }; settings.chaosSeconds = seconds
            case "--time-limit": guard let seconds = Double(value), seconds > 0 else { return nil }; settings.timeLimitSeconds = seconds
            default: return nil
            }
        }
        return settings
    }

    /// One worker process, and the crash point it was started with.
    struct WorkerSlot {
        var process: Process
        var crashAt: String
        /// While stopped with SIGSTOP (and shortly after), the worker is not killed.
        var sparedUntil: Int64 = 0
        var isTerminating = false
    }

    static func main(_ arguments: [String]) -> Int32 {
        guard let settings = parse(arguments) else {
            printError(
                "usage: JobsCrashProbe run [--seed N] [--jobs N] [--lease SECONDS] [--chaos-seconds S] [--time-limit S] [--keep]\n")
            return 64
        }
        report(
            "seed \(settings.seed) (replay: Scripts/jobs-crash-test --seed \(settings.seed)); \(settings.jobs) jobs, "
                + "\(settings.workers) workers, lease \(settings.lease) s")
        var template = Array((FileManager.default.temporaryDirectory.path + "/flow-jobs-crash-XXXXXX").utf8CString)
        guard let directory = template.withUnsafeMutableBufferPointer({ buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }) else {
            report("cannot make a temporary directory")
            return 2
        }
        let files = RunFiles(directory: directory)

        do {
            try prepareDatabase(files)
        } catch {
            report("cannot prepare the database: \(error)")
            return 2
        }
        guard run(settings, files: files) else {
            report("FAILED with seed \(settings.seed); the run's files are kept in \(directory)")
            return 1
        }
        if settings.keepsDirectory {
            report("the run's files are in \(directory)")
        } else {
            try? FileManager.default.removeItem(atPath: directory)
        }
        return 0
    }

    /// Creates the job tables, and the table of effects written in each completion's transaction,
    /// whose unique index refuses a second effect for a job.
    static func prepareDatabase(_ files: RunFiles) throws {
        let store = try SQLiteJobStore(path: files.database)
        try EventLoop.main.run(until: store.transaction { transaction in
            try transaction.execute(
                "CREATE TABLE effects (job_id INTEGER NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)", [])
            try transaction.execute("CREATE UNIQUE INDEX effects_once ON effects (job_id)", [])
        })
        try EventLoop.main.run(until: store.close())
    }

    static func spawn(_ arguments: [String], environment: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = arguments
        var childEnvironment = ProcessInfo.processInfo.environment
        childEnvironment["SWIFT_BACKTRACE"] = "enable=no"
        for (name, value) in environment { childEnvironment[name] = value }
        process.environment = childEnvironment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func run(_ settings: Settings, files: RunFiles) -> Bool {
        var random = SeededGenerator(seed: settings.seed)
        let events = AppendLog(files.events)
        let start = nowMilliseconds()
        var crashPointsChosen: [String: Int] = [:]

        func startWorker() throws -> WorkerSlot {
            var crashAt = ""
            // Half the workers are armed: with the controller's kills, a worker lives about a second.
            if Int.random(in: 0..<10, using: &random) >= 5 {
                let point = CrashPoint.allCases.randomElement(using: &random)!
                let occurrence =
                    switch point {
                    // Early occurrences: a worker lives about a second between the controller's kills.
                    case .afterClaim: Int.random(in: 1...12, using: &random)
                    case .inHandler: Int.random(in: 1...6, using: &random)
                    case .beforeCompletionCommit: Int.random(in: 1...8, using: &random)
                    case .duringHeartbeat: Int.random(in: 1...3, using: &random)
                    case .duringDrain: 1
                    }
                crashAt = "\(point.rawValue):\(occurrence)"
                crashPointsChosen[point.rawValue, default: 0] += 1
            }
            let process = try spawn(
                ["worker", files.directory, String(settings.lease), String(settings.concurrency)],
                environment: crashAt.isEmpty ? [:] : ["FLOW_JOBS_CRASH_AT": crashAt])
            return WorkerSlot(process: process, crashAt: crashAt)
        }

        var slots: [WorkerSlot] = []
        let driver: Process
        do {
            driver = try spawn(["driver", files.directory, String(settings.seed), String(settings.jobs)])
            for _ in 0..<settings.workers { slots.append(try startWorker()) }
        } catch {
            report("cannot start the processes: \(error)")
            return false
        }
        guard let database = ReadOnlyDatabase(path: files.database) else {
            report("cannot open \(files.database) to watch it")
            return false
        }

        var controllerKills = 0, terminations = 0, restarts = 0
        var nextKillAt = start + Int64.random(in: 100...500, using: &random)
        let stopAt = start + Int64.random(in: 5000...15_000, using: &random)
        var stopped: (slot: Int, continueAt: Int64)?
        var stopReport: (pid: Int32, runningJobs: Int)?
        var nextCheckAt = start
        var isQuiet = false
        let chaosEndsAt = start + Int64(settings.chaosSeconds * 1000)
        let deadline = start + Int64(settings.timeLimitSeconds * 1000)

        while nowMilliseconds() < deadline {
            usleep(5000)
            let now = nowMilliseconds()
            // Workers that ended by themselves (a crash point, or a drain that finished) start again.
            for index in slots.indices where !slots[index].process.isRunning && stopped?.slot != index {
                restarts += 1
                guard let replacement = try? startWorker() else {
                    report("cannot restart a worker")
                    return false
                }
                slots[index] = replacement
            }
            if stopReport == nil, now >= stopAt, let index = slots.indices.filter({ index in
                // A worker running jobs, so that its late updates meet the fence, and armed with no crash
                // point, so that it lives to make them.
                slots[index].process.isRunning && !slots[index].isTerminating && slots[index].crashAt.isEmpty
                    && database.integer(
                    "SELECT count(*) FROM flow_jobs WHERE state = 'running' AND worker = 'worker-\(slots[index].process.processIdentifier)'"
                ) > 0
            }).randomElement(using: &random) {
                let pid = slots[index].process.processIdentifier
                kill(pid, SIGSTOP)
                let running = database.integer(
                    "SELECT count(*) FROM flow_jobs WHERE state = 'running' AND worker = 'worker-\(pid)'")
                stopReport = (pid, running)
                let continueAt = now + Int64(settings.lease * 1000) + 1500
                stopped = (index, continueAt)
                slots[index].sparedUntil = continueAt + 2000
                report("SIGSTOP to worker \(pid) (\(running) jobs running) for \(continueAt - now) ms")
            }
            if let pause = stopped, now >= pause.continueAt {
                kill(slots[pause.slot].process.processIdentifier, SIGCONT)
                stopped = nil
            }
            if now < chaosEndsAt, now >= nextKillAt {
                nextKillAt = now + Int64.random(in: 100...500, using: &random)
                let candidates = slots.indices.filter { slots[$0].sparedUntil < now && !slots[$0].isTerminating }
                if let index = candidates.randomElement(using: &random) {
                    let pid = slots[index].process.processIdentifier
                    let drains = slots[index].crashAt.hasPrefix(CrashPoint.duringDrain.rawValue)
                    if drains || Int.random(in: 0..<10, using: &random) == 0 {
                        // A graceful stop: it drains (and a worker armed for it dies in the drain).
                        kill(pid, SIGTERM)
                        slots[index].isTerminating = true
                        terminations += 1
                    } else {
                        events.append("kill \(pid) \(nowMilliseconds())")
                        kill(pid, SIGKILL)
                        slots[index].process.waitUntilExit()
                        controllerKills += 1
                    }
                }
            }
            if now >= nextCheckAt {
                nextCheckAt = now + 500
                if !driver.isRunning {
                    guard driver.terminationStatus == 0, driver.terminationReason == .exit else {
                        report("the driver failed (status \(driver.terminationStatus))")
                        return false
                    }
                    let unfinished = database.integer(
                        "SELECT count(*) FROM flow_jobs WHERE state NOT IN ('completed', 'discarded', 'cancelled', 'quarantined')")
                    if unfinished == 0 && stopped == nil {
                        isQuiet = true
                        break
                    }
                }
            }
        }
        // Quiet, or out of time: every worker stops (drains, else is killed).
        if let pause = stopped { kill(slots[pause.slot].process.processIdentifier, SIGCONT) }
        for slot in slots where slot.process.isRunning { kill(slot.process.processIdentifier, SIGTERM) }
        let stopDeadline = Date().addingTimeInterval(5)
        for slot in slots {
            while slot.process.isRunning && Date() < stopDeadline { usleep(10_000) }
            if slot.process.isRunning { kill(slot.process.processIdentifier, SIGKILL) }
            slot.process.waitUntilExit()
        }
        if driver.isRunning {
            kill(driver.processIdentifier, SIGKILL)
            driver.waitUntilExit()
        }
        let elapsed = Double(nowMilliseconds() - start) / 1000
        report(
            "ran \(String(format: "%.1f", elapsed)) s: \(controllerKills) SIGKILLs, \(terminations) SIGTERMs, "
                + "\(restarts) restarts; crash points armed: "
                + crashPointsChosen.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        guard isQuiet else {
            let unfinished = database.integer(
                "SELECT count(*) FROM flow_jobs WHERE state NOT IN ('completed', 'discarded', 'cancelled', 'quarantined')")
            report("not every job finished within \(settings.timeLimitSeconds) s: \(unfinished) unfinished")
            return false
        }
        return Verification(files: files, database: database, lease: settings.lease, stop: stopReport).check()
    }
}
