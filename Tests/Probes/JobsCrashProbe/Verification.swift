import Foundation

/// The checks once every job has finished, from the database and the logs.
struct Verification {
    let files: RunFiles
    let database: any WatchedDatabase
    let lease: Double
    /// The worker stopped with SIGSTOP, and how many jobs it was running then.
    let stop: (pid: Int32, runningJobs: Int)?
    /// Whether a rerun later than the limit fails the run, or is only reported.
    let enforcesRescueTime: Bool

    struct Row {
        var state: String
        var attempt: Int
        var uniqueKey: String?
        var lastError: String?
        /// The driver's number for the job (PostgreSQL runs).
        var number: Int?
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
        guard case .success(let jobRows) = database.query(database.allJobsQuery),
              case .success(let effectRows) = database.query("SELECT job_id, count(*) FROM effects GROUP BY job_id")
        else {
            fail("cannot read the database")
            return false
        }
        var rows: [Int64: Row] = [:]
        for row in jobRows {
            guard let id = row[0].flatMap({ Int64($0) }), let state = row[1], let attempt = row[2].flatMap({ Int($0) })
            else { continue }
            rows[id] = Row(
                state: state, attempt: attempt, uniqueKey: row[3] ?? nil, lastError: row[4] ?? nil,
                number: row[5].flatMap { Int($0) })
        }
        var effects: [Int64: Int] = [:]
        for row in effectRows {
            if let id = row[0].flatMap({ Int64($0) }), let count = row[1].flatMap({ Int($0) }) { effects[id] = count }
        }

        // 1. Every acknowledged enqueue has exactly one row, finished; unique keys answered one job.
        //    An enqueue whose answer was lost (the server crashed as it committed, or before) was tried
        //    again: its jobs may have a row more, unacknowledged, and its unique keys a second job
        //    when the first had finished before the retry.
        var acknowledged: Set<Int64> = []
        var idsByKey: [String: Set<Int64>] = [:]
        var duplicatesAnswered = 0
        var unknownNumbers: Set<Int> = []
        for fields in lines(files.acknowledgements) {
            if fields.first == "unknown" {
                for field in fields.dropFirst() { if let number = Int(field) { unknownNumbers.insert(number) } }
                continue
            }
            guard fields.count == 4, fields[0] == "ack", let id = Int64(fields[1]) else { continue }
            acknowledged.insert(id)
            if fields[2] != "-" { idsByKey[String(fields[2]), default: []].insert(id) }
            if fields[3] == "1" { duplicatesAnswered += 1 }
        }
        let unknownKeys = Set(unknownNumbers.map { "key-\($0)" })
        let terminal: Set<String> = ["completed", "discarded", "cancelled", "quarantined"]
        for id in acknowledged.sorted() {
            guard let row = rows[id] else {
                fail("acknowledged job \(id) has no row")
                continue
            }
            if !terminal.contains(row.state) { fail("job \(id) is \(row.state), not finished") }
        }
        var unacknowledgedOfLostAnswers = 0
        for (id, row) in rows where !acknowledged.contains(id) {
            if let number = row.number, unknownNumbers.contains(number) {
                unacknowledgedOfLostAnswers += 1
                if !terminal.contains(row.state) { fail("job \(id) (of an enqueue whose answer was lost) is \(row.state)") }
            } else {
                fail("job \(id) was never acknowledged")
            }
        }
        for (key, ids) in idsByKey where ids.count != 1 && !unknownKeys.contains(key) {
            fail("unique key \(key) answered jobs \(ids.sorted())")
        }
        let rowsPerKey = Dictionary(grouping: rows.values.compactMap(\.uniqueKey), by: { $0 }).mapValues(\.count)
        for (key, count) in rowsPerKey where count != 1 && !unknownKeys.contains(key) {
            fail("unique key \(key) has \(count) rows")
        }
        if unknownNumbers.isEmpty ? duplicatesAnswered != idsByKey.count : duplicatesAnswered < idsByKey.count {
            fail("\(duplicatesAnswered) duplicate enqueues answered, not \(idsByKey.count)")
        }

        // 2. The effect in the completion's transaction: once for each completed job, none for others
        //    (the unique index refuses a second one, which would show as an error on the job).
        var stateCounts: [String: Int] = [:]
        for (id, row) in rows {
            stateCounts[row.state, default: 0] += 1
            let count = effects[id] ?? 0
            if row.state == "completed" && count != 1 { fail("completed job \(id) has \(count) effects") }
            if row.state != "completed" && count != 0 { fail("\(row.state) job \(id) has \(count) effects") }
            if let error = row.lastError, error.contains("UNIQUE") || error.contains("unique constraint") {
                fail("job \(id) met the unique index: \(error)")
            }
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
        var outages: [(start: Int64, end: Int64)] = []
        var readyAt: [Int32: Int64] = [:]
        var exitAt: [Int32: Int64] = [:]
        var termAt: [Int32: Int64] = [:]
        var trace = ClaimTrace()
        for fields in lines(files.events) {
            if trace.read(fields) { continue }
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
            case "ready" where fields.count == 3:
                if let pid = Int32(fields[1]), let time = Int64(fields[2]) { readyAt[pid] = time }
            case "exit" where fields.count == 3:
                if let pid = Int32(fields[1]), let time = Int64(fields[2]) { exitAt[pid] = time }
            case "term" where fields.count == 3:
                if let pid = Int32(fields[1]), let time = Int64(fields[2]) { termAt[pid] = time }
            case "outage-start" where fields.count == 2:
                if let time = Int64(fields[1]) { outages.append((time, Int64.max)) }
            case "outage-end" where fields.count == 2:
                if let time = Int64(fields[1]), let last = outages.indices.last { outages[last].end = time }
            default:
                break
            }
        }
        let limit = Int64(lease * 1000) + 1000
        // Each outage as the workers met it, measured: from the crash command to the first answer any
        // worker had from the restarted server (a claim or a heartbeat). The server was not there for
        // them in between; no allowance beyond it is guessed.
        let outageWindows = outages.map { outage in
            (start: outage.start, end: trace.firstAnswer(after: outage.end) ?? outage.end)
        }
        var orphaned = 0
        var waits: [Int64] = []
        var lateReruns = 0
        var unattributed = 0
        var longestWait: Int64 = 0
        var acrossOutages = 0
        var waitingForAWorker = 0
        var waitingForASlot = 0
        // The rerun with the least time left before its limit, and its evidence, reported either way.
        var closest: (slack: Int64, evidence: () -> [String])?
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
                // While the server is down nothing can run: a death whose window meets an outage has
                // exactly the outage's time from the death on more (an outage after the limit so
                // extended is not in its window).
                var allowed = limit
                for outage in outageWindows where outage.start < killedAt + allowed && outage.end > killedAt {
                    allowed += min(outage.end, Int64.max / 2) - max(outage.start, killedAt)
                }
                if allowed > limit { acrossOutages += 1 }
                // A job is rescued by another worker that lives through its rescue: when the kills
                // left none alive from its lease's end for a second (the workers die every few hundred
                // milliseconds, and a new one must open its store first), the limit runs from the
                // first moment one is. A worker sent SIGTERM claims no more (a claim answered in its
                // drain gives its jobs back, due at once), so it rescues nothing from then on.
                let leaseEnd = killedAt + Int64(lease * 1000)
                let rescuerFrom = readyAt.compactMap { pid, ready -> Int64? in
                    let start = max(ready, leaseEnd)
                    let death = min(killTimeByPID[pid] ?? Int64.max, exitAt[pid] ?? Int64.max, termAt[pid] ?? Int64.max)
                    return pid != claim.pid && death >= start + 1000 ? start : nil
                }.min()
                if let rescuerFrom, rescuerFrom > leaseEnd {
                    allowed += rescuerFrom - leaseEnd
                    waitingForAWorker += 1
                }
                // A rescued job runs when a worker has a free slot and it is the first due job. When
                // every claim sent from its lease's end to its rerun took as many jobs as it had slots,
                // the queue held more due jobs than the workers had room for all that time (on a loaded
                // machine the kills orphan jobs faster than the workers start and run them): the rerun
                // waited for capacity, not for its rescue, and is counted apart.
                let actualLeaseEnd = trace.leaseEnd(
                    job: id, deadWorker: claim.pid, claimedAt: claim.time, killedAt: killedAt, lease: lease)
                if wait > allowed
                    && trace.everyClaimTookAllItsSlots(from: actualLeaseEnd, to: next.time, outages: outageWindows)
                {
                    waitingForASlot += 1
                    continue
                }
                let evidence = {
                    trace.explain(
                        job: id, deadWorker: claim.pid, claimedAt: claim.time, killedAt: killedAt, lease: lease,
                        rerun: (next.pid, next.time), limit: allowed,
                        alive: readyAt.keys.filter { pid in
                            let death = min(killTimeByPID[pid] ?? .max, exitAt[pid] ?? .max, termAt[pid] ?? .max)
                            return pid != claim.pid && readyAt[pid, default: .max] < next.time && death > leaseEnd
                        })
                }
                if allowed - wait < closest?.slack ?? .max { closest = (allowed - wait, evidence) }
                if wait > allowed {
                    lateReruns += 1
                    if lateReruns <= 5 { for line in evidence() { report("  " + line) } }
                    if !enforcesRescueTime {
                        if lateReruns <= 5 {
                            report(
                                "NOT ENFORCED: job \(id) ran again \(wait) ms after its worker \(claim.pid) died "
                                    + "(limit \(allowed) ms)")
                        }
                        continue
                    }
                    fail(
                        "job \(id) ran again \(wait) ms after its worker \(claim.pid) died (limit \(allowed) ms); "
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
                + "p99 \(p99) ms, max \(longestWait) ms, \(lateReruns) beyond the limit; \(waitingForAWorker) waited for a "
                + "worker to live through the rescue (the limit runs from then); \(waitingForASlot) past it waited for a "
                + "free slot (every claim from the lease's end to the rerun took all its slots)")
        if let closest, lateReruns == 0 {
            report("the rerun closest to its limit, \(closest.slack) ms before it:")
            for line in closest.evidence() { report("  " + line) }
        }
        report(stopSummary)
        if !outages.isEmpty || !unknownNumbers.isEmpty {
            report(
                "\(outages.count) server crashes, down (crash to restart) "
                    + zip(outages, outageWindows).map { outage, window in
                        outage.end == Int64.max
                            ? "-1 ms" : "\(outage.end - outage.start) ms, first answer \(window.end - outage.end) ms later"
                    }.joined(separator: "; ")
                    + "; \(acrossOutages) reruns had an outage in their window (limit extended by exactly "
                    + "its part of it, crash to first answer after the restart); "
                    + "\(unknownNumbers.count) enqueues' answers lost and tried again, "
                    + "\(unacknowledgedOfLostAnswers) of them had committed (a second row, run and finished)")
        }
        if failures.isEmpty {
            report("PASSED")
            return true
        }
        report("\(failures.count) failures")
        return false
    }
}

/// The workers' claims, heartbeats and notifications (ClaimTracingStore's lines), to say of a late
/// rerun when its lease ended and when and why each live worker claimed after that.
struct ClaimTrace {
    struct Claim {
        var sentAt: Int64
        var answeredAt: Int64
        /// Free slots asked for, jobs taken, jobs rescued (`-` for none), and the answer's wake-up.
        var slots: Int
        var jobs: Int
        var rescued: String
        var wakeAt: Int64?
        var failed: Bool
    }

    var claims: [Int32: [Claim]] = [:]
    /// Per job: the worker, when the heartbeat answered and the lease's new end.
    var heartbeats: [Int64: [(pid: Int32, time: Int64, leaseEnd: Int64)]] = [:]
    var heard: [Int32: [(time: Int64, kind: Substring)]] = [:]

    /// Reads one line of the events log when it is one of the trace's.
    mutating func read(_ fields: [Substring]) -> Bool {
        switch fields.first {
        case "claimed" where fields.count == 8:
            guard let pid = Int32(fields[1]), let sent = Int64(fields[2]), let answered = Int64(fields[3]),
                let slots = Int(fields[4]), let jobs = Int(fields[5])
            else { return true }
            claims[pid, default: []].append(
                Claim(
                    sentAt: sent, answeredAt: answered, slots: slots, jobs: jobs, rescued: String(fields[6]),
                    wakeAt: Int64(fields[7]), failed: false))
        case "claimfailed" where fields.count == 4:
            guard let pid = Int32(fields[1]), let sent = Int64(fields[2]), let answered = Int64(fields[3]) else { return true }
            claims[pid, default: []].append(
                Claim(sentAt: sent, answeredAt: answered, slots: 0, jobs: 0, rescued: "-", wakeAt: nil, failed: true))
        case "heartbeat" where fields.count == 5:
            guard let pid = Int32(fields[1]), let id = Int64(fields[2]), let time = Int64(fields[3]),
                let end = Int64(fields[4])
            else { return true }
            heartbeats[id, default: []].append((pid, time, end))
        case "heard" where fields.count == 4:
            guard let pid = Int32(fields[1]), let time = Int64(fields[2]) else { return true }
            heard[pid, default: []].append((time, fields[3]))
        default:
            return false
        }
        return true
    }

    /// When a dead worker's lease of `job` ended: its last heartbeat's end before the kill, else a lease
    /// after it started the job (its claim committed a little before).
    func leaseEnd(job id: Int64, deadWorker: Int32, claimedAt: Int64, killedAt: Int64, lease: Double) -> Int64 {
        let lastBeat = heartbeats[id]?.filter { $0.pid == deadWorker && $0.time <= killedAt }.max { $0.time < $1.time }
        return lastBeat?.leaseEnd ?? claimedAt + Int64(lease * 1000)
    }

    /// Whether at least one claim was sent from `start` and answered by `end`, and every such claim
    /// answered (none failed) with as many jobs as it asked slots for. A claim that failed within an
    /// outage (`outages`: the server gone, measured) is the outage's, whose time the limit has already.
    func everyClaimTookAllItsSlots(from start: Int64, to end: Int64, outages: [(start: Int64, end: Int64)]) -> Bool {
        let sent = claims.values.joined().filter { claim in
            claim.sentAt >= start && claim.answeredAt <= end
                && !(claim.failed && outages.contains { claim.answeredAt >= $0.start && claim.answeredAt <= $0.end })
        }
        return !sent.isEmpty && sent.allSatisfy { !$0.failed && $0.jobs == $0.slots }
    }

    /// The first answer a worker had from the server after `time`: a claim answered or a heartbeat.
    func firstAnswer(after time: Int64) -> Int64? {
        let claimed = claims.values.joined().filter { !$0.failed && $0.answeredAt > time }.map(\.answeredAt).min()
        let beat = heartbeats.values.joined().map(\.time).filter { $0 > time }.min()
        return [claimed, beat].compactMap { $0 }.min()
    }

    /// The evidence for one late rerun, times in milliseconds from the kill: the dead worker's lease
    /// end (its last heartbeat's, else its claim's), and for each worker alive then, its last claim
    /// answered before that end (with the wake-up it said) and every claim it sent from then to the
    /// rerun, with the notifications it heard in between.
    func explain(
        job id: Int64, deadWorker: Int32, claimedAt: Int64, killedAt: Int64, lease: Double,
        rerun: (pid: Int32, time: Int64), limit: Int64, alive: [Int32]
    ) -> [String] {
        func at(_ time: Int64?) -> String { time.map { "\($0 - killedAt >= 0 ? "+" : "")\($0 - killedAt)" } ?? "-" }
        let lastBeat = heartbeats[id]?.filter { $0.pid == deadWorker && $0.time <= killedAt }.max { $0.time < $1.time }
        let leaseEnd = self.leaseEnd(job: id, deadWorker: deadWorker, claimedAt: claimedAt, killedAt: killedAt, lease: lease)
        var lines = [
            "job \(id): worker \(deadWorker) killed at 0, its lease ended at \(at(leaseEnd)) ("
                + (lastBeat == nil ? "no heartbeat: from its start" : "last heartbeat at \(at(lastBeat?.time))")
                + "); ran again on \(rerun.pid) at \(at(rerun.time)), limit +\(limit)"
        ]
        func describe(_ claim: Claim) -> String {
            claim.failed
                ? "sent \(at(claim.sentAt)) failed \(at(claim.answeredAt))"
                : "sent \(at(claim.sentAt)) answered \(at(claim.answeredAt)): \(claim.jobs) of \(claim.slots) slots, "
                    + "rescued \(claim.rescued), wake \(at(claim.wakeAt))"
        }
        for pid in alive.sorted() {
            let own = claims[pid] ?? []
            let before = own.last { $0.answeredAt <= leaseEnd }
            let after = own.filter { $0.sentAt > (before?.sentAt ?? .min) && $0.sentAt <= rerun.time }
            let heardThen = (heard[pid] ?? []).filter { $0.time >= leaseEnd && $0.time <= rerun.time }
            lines.append(
                "  worker \(pid): last claim before the lease end "
                    + (before.map(describe) ?? "none")
                    + "; heard \(heardThen.count) notifications from then"
                    + (heardThen.first.map { " (first \($0.kind) at \(at($0.time)))" } ?? ""))
            for claim in after.prefix(6) { lines.append("    claim \(describe(claim))") }
        }
        return lines
    }
}
