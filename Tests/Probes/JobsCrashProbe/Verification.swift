import Foundation

/// The checks once every job has finished, from the database and the logs.
struct Verification {
    let files: RunFiles
    let database: ReadOnlyDatabase
    let lease: Double
    /// The worker stopped with SIGSTOP, and how many jobs it was running then.
    let stop: (pid: Int32, runningJobs: Int)?

    struct Row {
        var state: String
        var attempt: Int
        var uniqueKey: String?
        var lastError: String?
    }

    func lines(_ path: String) -> [[Substring]] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { $0.split(separator: " ") }
    }

    /// Runs every check, reports each failure, and answers whether all passed.
    func check() -> Bool {
        var failures: [String] = []
        func fail(_ message: String) {
            if failures.count < 20 { report("FAILED: \(message)") }
            failures.append(message)
        }

        // The database's jobs and effects.
        guard case .success(let jobRows) = database.query("SELECT id, state, attempt, unique_key, last_error FROM flow_jobs"),
              case .success(let effectRows) = database.query("SELECT job_id, count(*) FROM effects GROUP BY job_id")
        else {
            fail("cannot read the database")
            return false
        }
        var rows: [Int64: Row] = [:]
        for row in jobRows {
            guard let id = row[0].flatMap({ Int64($0) }), let state = row[1], let attempt = row[2].flatMap({ Int($0) })
            else { continue }
            rows[id] = Row(state: state, attempt: attempt, uniqueKey: row[3] ?? nil, lastError: row[4] ?? nil)
        }
        var effects: [Int64: Int] = [:]
        for row in effectRows {
            if let id = row[0].flatMap({ Int64($0) }), let count = row[1].flatMap({ Int($0) }) { effects[id] = count }
        }

        // 1. Every acknowledged enqueue has exactly one row, finished; unique keys answered one job.
        var acknowledged: Set<Int64> = []
        var idsByKey: [String: Set<Int64>] = [:]
        var duplicatesAnswered = 0
        for fields in lines(files.acknowledgements) where fields.count == 4 && fields[0] == "ack" {
            guard let id = Int64(fields[1]) else { continue }
            acknowledged.insert(id)
            if fields[2] != "-" { idsByKey[String(fields[2]), default: []].insert(id) }
            if fields[3] == "1" { duplicatesAnswered += 1 }
        }
        let terminal: Set<String> = ["completed", "discarded", "cancelled", "quarantined"]
        for id in acknowledged.sorted() {
            guard let row = rows[id] else {
                fail("acknowledged job \(id) has no row")
                continue
            }
            if !terminal.contains(row.state) { fail("job \(id) is \(row.state), not finished") }
        }
        for id in rows.keys where !acknowledged.contains(id) { fail("job \(id) was never acknowledged") }
        for (key, ids) in idsByKey where ids.count != 1 { fail("unique key \(key) answered jobs \(ids.sorted())") }
        let rowsPerKey = Dictionary(grouping: rows.values.compactMap(\.uniqueKey), by: { $0 }).mapValues(\.count)
        for (key, count) in rowsPerKey where count != 1 { fail("unique key \(key) has \(count) rows") }
        if duplicatesAnswered != idsByKey.count { fail("\(duplicatesAnswered) duplicate enqueues answered, not \(idsByKey.count)") }

        // 2. The effect in the completion's transaction: once for each completed job, none for others
        //    (the unique index refuses a second one, which would show as an error on the job).
        var stateCounts: [String: Int] = [:]
        for (id, row) in rows {
            stateCounts[row.state, default: 0] += 1
            let count = effects[id] ?? 0
            if row.state == "completed" && count != 1 { fail("completed job \(id) has \(count) effects") }
            if row.state != "completed" && count != 0 { fail("\(row.state) job \(id) has \(count) effects") }
            if let error = row.lastError, error.contains("UNIQUE") { fail("job \(id) met the unique index: \(error)") }
        }

        // 3. The effect outside the transaction: at most one line per recorded attempt.
        var outsideLines: [Int64: Int] = [:]
        for fields in lines(files.outsideEffects) where fields.count == 3 {
            if let id = Int64(fields[0]) { outsideLines[id, default: 0] += 1 }
        }
        var repeatedOutside = 0
        for (id, count) in outsideLines {
            let attempts = rows[id]?.attempt ?? 0
            if count > attempts { fail("job \(id) wrote \(count) lines outside the transaction in \(attempts) attempts") }
            if count > 1 { repeatedOutside += 1 }
        }

        // 4. A job running on a killed worker runs again within the lease plus a second.
        var claims: [Int64: [(attempt: Int, pid: Int32, time: Int64, runAt: Int64)]] = [:]
        var kills: [(pid: Int32, time: Int64)] = []
        var selfKills: [String: Int] = [:]
        var lostLeases: [Int32: Int] = [:]
        for fields in lines(files.events) {
            switch fields.first {
            case "claim" where fields.count == 6:
                if let id = Int64(fields[1]), let attempt = Int(fields[2]), let pid = Int32(fields[3]),
                    let time = Int64(fields[4]), let runAt = Int64(fields[5])
                {
                    claims[id, default: []].append((attempt, pid, time, runAt))
                }
            case "kill" where fields.count == 3:
                if let pid = Int32(fields[1]), let time = Int64(fields[2]) { kills.append((pid, time)) }
            case "selfkill" where fields.count == 4:
                if let pid = Int32(fields[1]), let time = Int64(fields[2]) { kills.append((pid, time)) }
                selfKills[String(fields[3]), default: 0] += 1
            case "leaselost" where fields.count == 3:
                if let pid = Int32(fields[1]) { lostLeases[pid, default: 0] += 1 }
            default:
                break
            }
        }
        let limit = Int64(lease * 1000) + 1000
        var orphaned = 0
        var waits: [Int64] = []
        var lateReruns = 0
        var unattributed = 0
        var longestWait: Int64 = 0
        let killTimeByPID = Dictionary(kills.map { ($0.pid, $0.time) }, uniquingKeysWith: min)
        for (id, jobClaims) in claims {
            let ordered = jobClaims.sorted { $0.time < $1.time }
            for (index, claim) in ordered.enumerated() {
                guard let killedAt = killTimeByPID[claim.pid], killedAt >= claim.time else { continue }
                // Running on the worker when it died, unless it ran again before (a retry after a failure).
                let next = ordered[(index + 1)...].first { $0.time >= killedAt }
                guard ordered[(index + 1)...].allSatisfy({ $0.time >= killedAt }), let next else { continue }
                // A worker killed after its claim committed but before it started the job logged no
                // claim: the attempt numbers show the gap, and that claim's kill is the one to time.
                guard next.attempt <= claim.attempt + 1 else {
                    unattributed += 1
                    continue
                }
                orphaned += 1
                let wait = next.time - killedAt
                let rescue = next.runAt - killedAt
                waits.append(wait)
                longestWait = max(longestWait, wait)
                // The guarantee: a dead worker's job runs again within the lease plus one second. Its
                // lease ends at most a lease after the kill (the last heartbeat came before it), every
                // live worker arms a timer for the earliest lease end of another's job, and a rescued
                // job keeps its run time, so it goes first among the due jobs.
                if wait > limit {
                    lateReruns += 1
                    fail(
                        "job \(id) ran again \(wait) ms after its worker \(claim.pid) died (limit \(limit) ms); "
                            + "its run time was \(rescue) ms after the kill")
                }
            }
        }

        // 5. The worker stopped past its lease was refused when it tried to finish its rescued jobs.
        var stopSummary = "no SIGSTOP"
        if let stop {
            let lost = lostLeases[stop.pid] ?? 0
            stopSummary = "SIGSTOP of a worker running \(stop.runningJobs) jobs: \(lost) leases lost on continuing"
            if stop.runningJobs > 0 && lost == 0 { fail("the worker stopped past its lease lost no lease") }
        }

        report(
            "\(rows.count) jobs: "
                + stateCounts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
                + "; \(effects.values.reduce(0, +)) effects in completions; \(repeatedOutside) jobs with an outside effect repeated")
        report(
            "\(kills.count) deaths (self-kills: "
                + selfKills.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
                + "); \(unattributed) jobs ran again after an unlogged claim (a worker killed before it started them)")
        let sortedWaits = waits.sorted()
        let p99 = sortedWaits.isEmpty ? 0 : sortedWaits[min(sortedWaits.count - 1, sortedWaits.count * 99 / 100)]
        report(
            "\(orphaned) jobs ran again after their worker died (limit \(limit) ms): running again p50 \(sortedWaits.isEmpty ? 0 : sortedWaits[sortedWaits.count / 2]) ms, "
                + "p99 \(p99) ms, max \(longestWait) ms, \(lateReruns) beyond the limit")
        report(stopSummary)
        if failures.isEmpty {
            report("PASSED")
            return true
        }
        report("\(failures.count) failures")
        return false
    }
}
