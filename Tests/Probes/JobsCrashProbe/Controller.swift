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
        /// The PostgreSQL database of the run (its own schema, `crashTestSchema`), or `nil` for SQLite.
        var postgresURL: String?
        /// The cluster's folder and Scripts/postgres-test-cluster, to crash and restart the server.
        var clusterDirectory: String?
        var clusterScript: String?
        /// How many times the server is crashed (`pg_ctl stop -m immediate`) and restarted.
        var serverCrashes = 3
        /// Whether reruns later than the lease plus a second are reported without failing the run.
        var rescueTimeNotEnforced = false
    }

    static func parse(_ arguments: [String]) -> Settings? {
        var settings = Settings()
        var remaining = arguments[...]
        while let option = remaining.popFirst() {
            if option == "--keep" {
                settings.keepsDirectory = true
                continue
            }
            if option == "--rescue-time-not-enforced" {
                settings.rescueTimeNotEnforced = true
                continue
            }
            guard let value = remaining.popFirst() else { return nil }
            switch option {
            case "--seed": guard let seed = UInt64(value) else { return nil }; settings.seed = seed
            case "--jobs": guard let jobs = Int(value), jobs >= 1 else { return nil }; settings.jobs = jobs
            case "--lease": guard let lease = Double(value), lease > 0 else { return nil }; settings.lease = lease
            case "--chaos-seconds": guard let seconds = Double(value), seconds >= 0 else { return nil }; settings.chaosSeconds = seconds
            case "--time-limit": guard let seconds = Double(value), seconds > 0 else { return nil }; settings.timeLimitSeconds = seconds
            case "--postgres": settings.postgresURL = value
            case "--cluster": settings.clusterDirectory = value
            case "--cluster-script": settings.clusterScript = value
            case "--server-crashes": guard let count = Int(value), count >= 0 else { return nil }; settings.serverCrashes = count
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
        guard let settings = parse(arguments),
            settings.postgresURL != nil || (settings.clusterDirectory == nil && settings.clusterScript == nil),
            (settings.clusterDirectory == nil) == (settings.clusterScript == nil)
        else {
            printError(
                "usage: JobsCrashProbe run [--seed N] [--jobs N] [--lease SECONDS] [--chaos-seconds S] [--time-limit S] [--keep]\n"
                    + "         [--postgres URL [--cluster DIR --cluster-script PATH] [--server-crashes N]]\n"
                    + "         [--rescue-time-not-enforced]\n")
            return 64
        }
        let replay = settings.postgresURL == nil ? "" : " --postgres"
        report(
            "seed \(settings.seed) (replay: Scripts/jobs-crash-test\(replay) --seed \(settings.seed)); \(settings.jobs) jobs, "
                + "\(settings.workers) workers, lease \(settings.lease) s"
                + (settings.postgresURL == nil ? "; SQLite" : "; PostgreSQL, schema \(crashTestSchema)")
                + (settings.clusterDirectory == nil ? "" : ", the server crashed \(settings.serverCrashes) times"))
        if let url = settings.postgresURL {
            // The driver and the workers inherit it.
            setenv(postgresURLVariable, url, 1)
        }
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
            report(
                "FAILED with seed \(settings.seed); the run's files are kept in \(directory)"
                    + (settings.postgresURL == nil ? "" : ", its tables in the schema \(crashTestSchema)"))
            return 1
        }
        if settings.keepsDirectory {
            report("the run's files are in \(directory)")
        } else {
            try? FileManager.default.removeItem(atPath: directory)
            if let url = settings.postgresURL {
                _ = PostgresDatabase(url: url, schema: "public").query("DROP SCHEMA IF EXISTS \(crashTestSchema) CASCADE")
            }
        }
        return 0
    }

    /// Creates the job tables, and the table of effects written in each completion's transaction,
    /// whose unique index refuses a second effect for a job.
    static func prepareDatabase(_ files: RunFiles) throws {
        let store: any JobStore
        if let url = files.postgresURL {
            // A fresh schema: an earlier run's, kept after a failure, goes.
            if case .failure(let error) = PostgresDatabase(url: url, schema: "public").query(
                "DROP SCHEMA IF EXISTS \(crashTestSchema) CASCADE")
            {
                throw error
            }
            store = try files.openStore()
        } else {
            store = try SQLiteJobStore(path: files.database)
        }
        try EventLoop.main.run(until: store.transaction { transaction in
            try transaction.execute(
                "CREATE TABLE effects (job_id INTEGER NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)", [])
            try transaction.execute("CREATE UNIQUE INDEX effects_once ON effects (job_id)", [])
        })
        try EventLoop.main.run(until: closing(store))
    }

    /// Runs `path` with `arguments` (its standard output discarded) and waits for it with
    /// `waitpid`: Foundation's `Process.waitUntilExit()` can miss the end of a program whose own child
    /// outlives it (`pg_ctl start` leaves the server running). Answers whether it exited with 0.
    static func runToItsEnd(_ path: String, _ arguments: [String]) -> Bool {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            report("cannot run \(path): \(String(cString: strerror(spawned)))")
            return false
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return false }
        }
        // Exited (the low 7 bits zero) with status 0.
        return status & 0x7f == 0 && (status >> 8) & 0xff == 0
    }

    /// Whether `pid` runs (not a zombie that `Process` has not reaped yet, whose jobs look running).
    static func isAlive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return false }
        let state = stat[stat.index(after: end)...].drop { $0 == " " }.first
        return state != "Z" && state != "X"
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
        let database: any WatchedDatabase
        if let url = settings.postgresURL {
            database = PostgresDatabase(url: url, schema: crashTestSchema)
        } else if let sqlite = ReadOnlyDatabase(path: files.database) {
            database = sqlite
        } else {
            report("cannot open \(files.database) to watch it")
            return false
        }
        // The server's crashes: the first a few seconds in, then one every 4 to 9 s, each down for 0.2
        // to 1.5 s; none while a worker is stopped past its lease or shortly after it continues (its
        // late finishes must meet the fence, not a server that is down).
        var nextServerCrashAt = settings.clusterDirectory == nil ? Int64.max : start + Int64.random(in: 2000...5000, using: &random)
        var serverRestartAt: Int64?
        var serverCrashes = 0
        var lastContinueAt: Int64 = 0
        var lastServerRestartAt: Int64 = 0
        func cluster(_ command: String) -> Bool {
            guard let script = settings.clusterScript, let directory = settings.clusterDirectory else { return false }
            return runToItsEnd(script, [command, directory])
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
            // A worker whose attempt could not record its end while the server was down let go of the
            // attempt, and its job stays running under the worker's name until the lease ends: the
            // stop waits a lease after a restart, and counts only leases that have not ended.
            if stopReport == nil, now >= stopAt, now >= lastServerRestartAt + Int64(settings.lease * 1000),
                let index = slots.indices.filter({ index in
                    // A worker running jobs, so that its late updates meet the fence, and armed with no
                    // crash point, so that it lives to make them.
                    slots[index].process.isRunning && isAlive(slots[index].process.processIdentifier)
                        && !slots[index].isTerminating && slots[index].crashAt.isEmpty
                        && database.integer(
                            "SELECT count(*) FROM flow_jobs WHERE state = 'running' AND lease_expires_at > \(now) "
                                + "AND worker = 'worker-\(slots[index].process.processIdentifier)'") > 0
                }).randomElement(using: &random)
            {
                let pid = slots[index].process.processIdentifier
                kill(pid, SIGSTOP)
                let running = database.integer(
                    "SELECT count(*) FROM flow_jobs WHERE state = 'running' AND lease_expires_at > \(now) "
                        + "AND worker = 'worker-\(pid)'")
                stopReport = (pid, running)
                let continueAt = now + Int64(settings.lease * 1000) + 1500
                stopped = (index, continueAt)
                slots[index].sparedUntil = continueAt + 2000
                report("SIGSTOP to worker \(pid) (\(running) jobs running) for \(continueAt - now) ms")
            }
            if let pause = stopped, let stop = stopReport, now >= pause.continueAt {
                // Continued once another worker has taken over at least one of its jobs, so that its late
                // updates meet a moved fence: a lease that ended but that nobody took over is still the
                // stopped worker's to renew. A server that is down or recovering in the stop (a restart
                // under load takes seconds) holds the takeover back, and the stop with it, 30 s at most.
                let stillHeld = database.integer(
                    "SELECT count(*) FROM flow_jobs WHERE state = 'running' AND worker = 'worker-\(stop.pid)'")
                let longest = pause.continueAt + 30_000
                if (stillHeld >= 0 && stillHeld < stop.runningJobs) || now >= longest {
                    kill(slots[pause.slot].process.processIdentifier, SIGCONT)
                    if now >= pause.continueAt + 500 {
                        report(
                            "SIGCONT to worker \(stop.pid) \(now - pause.continueAt) ms later than planned: "
                                + (now >= longest ? "none of its jobs taken over" : "its jobs were taken over then"))
                    }
                    // Time to reconnect (its connections may have died with the server) and to meet the
                    // moved fence at its next heartbeat or completion before it may be killed.
                    slots[pause.slot].sparedUntil = max(slots[pause.slot].sparedUntil, now + 5000)
                    stopped = nil
                    lastContinueAt = now
                }
            }
            if serverRestartAt == nil, now >= nextServerCrashAt, serverCrashes < settings.serverCrashes {
                if stopped != nil || now < lastContinueAt + 5000 || (stopReport == nil && abs(now - stopAt) < 1000) {
                    nextServerCrashAt = now + 500
                } else {
                    let downFor = Int64.random(in: 200...1500, using: &random)
                    // The outage starts no earlier than the crash command: a rerun's limit grows by it.
                    let crashedAt = nowMilliseconds()
                    guard cluster("crash") else {
                        report("Scripts/postgres-test-cluster crash failed")
                        return false
                    }
                    events.append("outage-start \(crashedAt)")
                    serverCrashes += 1
                    serverRestartAt = nowMilliseconds() + downFor
                    report("the server crashed (pg_ctl stop -m immediate), down for \(downFor) ms")
                }
            }
            if let restartAt = serverRestartAt, now >= restartAt {
                guard cluster("restart") else {
                    report("Scripts/postgres-test-cluster restart failed")
                    return false
                }
                lastServerRestartAt = nowMilliseconds()
                events.append("outage-end \(lastServerRestartAt)")
                serverRestartAt = nil
                nextServerCrashAt = nowMilliseconds() + Int64.random(in: 4000...9000, using: &random)
            }
            if now < chaosEndsAt, now >= nextKillAt {
                nextKillAt = now + Int64.random(in: 100...500, using: &random)
                let candidates = slots.indices.filter {
                    slots[$0].sparedUntil < now && !slots[$0].isTerminating && stopped?.slot != $0
                }
                if let index = candidates.randomElement(using: &random) {
                    let pid = slots[index].process.processIdentifier
                    let drains = slots[index].crashAt.hasPrefix(CrashPoint.duringDrain.rawValue)
                    if drains || Int.random(in: 0..<10, using: &random) == 0 {
                        // A graceful stop: it drains (and a worker armed for it dies in the drain).
                        events.append("term \(pid) \(nowMilliseconds())")
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
            if now >= nextCheckAt, serverRestartAt == nil {
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
        if serverRestartAt != nil, !cluster("restart") { report("Scripts/postgres-test-cluster restart failed") }
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
                + "\(restarts) restarts, \(serverCrashes) server crashes; crash points armed: "
                + crashPointsChosen.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        guard isQuiet else {
            let unfinished = database.integer(
                "SELECT count(*) FROM flow_jobs WHERE state NOT IN ('completed', 'discarded', 'cancelled', 'quarantined')")
            report("not every job finished within \(settings.timeLimitSeconds) s: \(unfinished) unfinished")
            return false
        }
        return Verification(
            files: files, database: database, lease: settings.lease, stop: stopReport,
            enforcesRescueTime: !settings.rescueTimeNotEnforced
        ).check()
    }
}
