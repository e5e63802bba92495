import FlowJobs
import Foundation

extension PostgresJobStore {
    /// The store's SQL, run inside a transaction on a ``PostgresSession``: the same steps as the SQLite
    /// store's, so that the two keep one state machine (`JobLifecycle`) and one set of rules.
    struct Statements: Sendable {
        /// The `NOTIFY` channel of the store's schema.
        let channel: String
        /// This store object's identity in notification payloads: it hears its own commits directly.
        let instance: String

        static let claimableStates = "('scheduled', 'available', 'retryable')"

        // MARK: Notifications

        /// Sends a `NOTIFY` for the transaction's enqueues and cancellation requests, delivered to
        /// other processes' listeners when it commits.
        func notifyOtherProcesses(_ session: PostgresSession) throws {
            var payloads: [String] = []
            for notification in session.pendingNotifications {
                switch notification {
                case .enqueued(let queues): payloads += queues.sorted().map { "\(instance) e \($0)" }
                case .cancellationRequested(let id): payloads.append("\(instance) c \(id.rawValue)")
                // One payload for the transaction's ends, however many: listeners read their waited
                // jobs again (a `JobHandle` in another process learns of its job's end).
                case .finished: payloads.append("\(instance) f -")
                case .committedElsewhere: break
                }
            }
            guard !payloads.isEmpty else { return }
            try session.run(
                "SELECT pg_notify($1, payload) FROM unnest($2::text[]) AS payload",
                [.text(channel), .text(Self.arrayLiteral(Array(Set(payloads)).sorted()))])
        }

        /// What another process's payload tells this process's observers; `nil` for this store's own.
        func notification(fromPayload payload: String) -> JobStoreNotification? {
            let parts = payload.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0] != instance else { return nil }
            switch parts[1] {
            case "e": return .enqueued(queues: [String(parts[2])])
            case "c": return Int64(parts[2]).map { .cancellationRequested(JobID(rawValue: $0)) }
            case "f": return .committedElsewhere
            default: return nil
            }
        }

        /// `values` as a PostgreSQL array literal (`{"a","b"}`), every element quoted.
        static func arrayLiteral(_ values: [String?]) -> String {
            var literal = "{"
            literal.reserveCapacity(2 + values.count * 12)
            for (index, value) in values.enumerated() {
                if index > 0 { literal += "," }
                guard let value else {
                    literal += "NULL"
                    continue
                }
                literal += "\""
                // Most elements (names, queues, hex payloads) hold nothing to escape: copied whole.
                if value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") }) {
                    for scalar in value.unicodeScalars {
                        if scalar == "\\" || scalar == "\"" { literal += "\\" }
                        literal.unicodeScalars.append(scalar)
                    }
                } else {
                    literal += value
                }
                literal += "\""
            }
            return literal + "}"
        }

        /// `bytes` in `bytea`'s hex input form, `\x0a1b…`.
        static func byteaText(_ bytes: Data) -> String {
            let digits = Array("0123456789abcdef".utf8)
            var text: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
            text.reserveCapacity(2 + bytes.count * 2)
            for byte in bytes {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
            return String(decoding: text, as: UTF8.self)
        }

        /// The one statement that adds `jobs`, none of which has a unique key, and sends their
        /// queues' notifications: atomic on its own, so it needs no transaction around it. Its rows
        /// are the new jobs' identifiers, in the order of `jobs`. One job goes as a row of plain
        /// parameters, which the server reads faster than the arrays several jobs go as.
        func insertWithoutUniqueKeys(_ jobs: [NewJob], now: Int64) -> (sql: String, arguments: [SQLValue]) {
            if jobs.count == 1 { return insertOneWithoutUniqueKey(jobs[0], now: now) }
            let runAts = jobs.map { $0.runAt?.milliseconds ?? now }
            let states = runAts.map { JobLifecycle(isDue: $0 <= now, maxAttempts: 1).state.rawValue }
            let payloads = jobs.map { Self.byteaText($0.payload) }
            let traceContexts = jobs.map { StoredJobRow.encodeTraceContext($0.traceContext).textValue }
            let queues = Set(jobs.map(\.queue)).sorted().map { "\(instance) e \($0)" }
            let sql = """
                WITH inserted AS (
                    INSERT INTO flow_jobs (
                        name, queue, payload, state, priority, run_at, max_attempts, created_at, trace_context,
                        timeout_ms)
                    SELECT name, queue, payload, state, priority, run_at, max_attempts, $8, trace_context, timeout_ms
                    FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::int[], $6::bigint[],
                        $7::int[], $9::text[], $12::bigint[])
                        AS job(name, queue, payload, state, priority, run_at, max_attempts, trace_context, timeout_ms)
                    RETURNING id),
                notified AS (SELECT count(pg_notify($10, payload)) FROM unnest($11::text[]) AS payload)
                SELECT id FROM inserted, notified ORDER BY id
                """
            return (
                sql,
                [
                    .text(Self.arrayLiteral(jobs.map(\.name))), .text(Self.arrayLiteral(jobs.map(\.queue))),
                    .text(Self.arrayLiteral(payloads)), .text(Self.arrayLiteral(states)),
                    .text("{" + jobs.map { String($0.priority) }.joined(separator: ",") + "}"),
                    .text("{" + runAts.map { String($0) }.joined(separator: ",") + "}"),
                    .text("{" + jobs.map { String($0.maxAttempts) }.joined(separator: ",") + "}"), .integer(now),
                    .text(Self.arrayLiteral(traceContexts)), .text(channel), .text(Self.arrayLiteral(queues)),
                    .text("{" + jobs.map { $0.timeout.map { String($0.milliseconds) } ?? "NULL" }.joined(separator: ",") + "}"),
                ]
            )
        }

        /// ``insertWithoutUniqueKeys(_:now:)`` for one job: the same row and notification.
        private func insertOneWithoutUniqueKey(_ job: NewJob, now: Int64) -> (sql: String, arguments: [SQLValue]) {
            let runAt = job.runAt?.milliseconds ?? now
            let sql = """
                WITH inserted AS (
                    INSERT INTO flow_jobs (
                        name, queue, payload, state, priority, run_at, max_attempts, created_at, trace_context,
                        timeout_ms)
                    VALUES (
                        $1::text, $2::text, $3::bytea, $4::text, $5::int, $6::bigint, $7::int, $8::bigint, $9::text,
                        $10::bigint)
                    RETURNING id),
                notified AS (SELECT pg_notify($11::text, $12::text))
                SELECT id FROM inserted, notified
                """
            return (
                sql,
                [
                    .text(job.name), .text(job.queue), .text(Self.byteaText(job.payload)),
                    .text(JobLifecycle(isDue: runAt <= now, maxAttempts: 1).state.rawValue),
                    .integer(Int64(job.priority)), .integer(runAt), .integer(Int64(job.maxAttempts)), .integer(now),
                    StoredJobRow.encodeTraceContext(job.traceContext), job.timeout.map { .integer($0.milliseconds) } ?? .null,
                    .text(channel), .text("\(instance) e \(job.queue)"),
                ]
            )
        }

        // MARK: One-statement claims and completions

        /// The one statement that claims for `request` when no queue of it has a limit across workers
        /// and no lease has ended (the cases that need a transaction: counting a queue's running jobs
        /// under its row's lock, rescuing): atomic on its own, so it needs no transaction around it.
        /// Its first row says whether those checks let it claim (`false`: it claimed nothing), the time
        /// to wake for the next job of a queue it left slots free in, and the earliest end of another
        /// worker's lease; its rows' other columns are the claimed jobs (all `NULL` when none). It takes
        /// the jobs due within the request's lookahead, as the transaction's claim does; a lease is
        /// rescued only once it has ended, lookahead or not.
        func claimInOneStatement(_ request: ClaimRequest, now: Int64) -> (sql: String, arguments: [SQLValue]) {
            let wanted = request.slotsByQueue.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            // The claims mirror JobLifecycle's `claimed`: attempt and fence up by one, running. The
            // time to wake excludes the jobs claimed here (the snapshot still shows them queued).
            let sql = """
                WITH gate AS (
                    SELECT NOT EXISTS (SELECT 1 FROM flow_queues WHERE name = ANY($1::text[]))
                        AND NOT EXISTS (SELECT 1 FROM flow_jobs WHERE state = 'running' AND lease_expires_at <= $4)
                        AS open),
                wanted AS (SELECT queue, slots FROM unnest($1::text[], $2::int[]) AS wanted(queue, slots)),
                picked AS (
                    SELECT job.id FROM wanted CROSS JOIN LATERAL (
                        SELECT id FROM flow_jobs
                        WHERE queue = wanted.queue AND state IN \(Self.claimableStates) AND run_at <= $7
                            AND name = ANY($3::text[]) AND (SELECT open FROM gate)
                        ORDER BY priority DESC, run_at, id LIMIT wanted.slots FOR UPDATE SKIP LOCKED) AS job),
                claimed AS (
                    UPDATE flow_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
                        lease_expires_at = $5, worker = $6
                    WHERE id = ANY(ARRAY(SELECT id FROM picked))
                    RETURNING \(PostgresSchema.jobColumns)),
                summary AS (
                    SELECT (SELECT open FROM gate) AS open,
                        (SELECT min(run_at) FROM flow_jobs
                            WHERE state IN \(Self.claimableStates) AND name = ANY($3::text[])
                                AND id NOT IN (SELECT id FROM claimed)
                                AND queue IN (SELECT queue FROM wanted
                                    WHERE slots > (SELECT count(*) FROM claimed WHERE claimed.queue = wanted.queue)))
                            AS wake_at,
                        (SELECT min(lease_expires_at) FROM flow_jobs
                            WHERE state = 'running' AND worker IS DISTINCT FROM $6) AS lease_ends_at)
                SELECT summary.open, summary.wake_at, summary.lease_ends_at, claimed.*
                FROM summary LEFT JOIN claimed ON true
                """
            return (
                sql,
                [
                    .text(Self.arrayLiteral(wanted.map(\.key))),
                    .text("{" + wanted.map { String($0.value) }.joined(separator: ",") + "}"),
                    .text(Self.arrayLiteral(request.names.sorted())), .integer(now),
                    .integer(now + request.leaseDuration.milliseconds), .text(request.worker),
                    .integer(now + request.lookahead.milliseconds),
                ]
            )
        }

        /// What ``claimInOneStatement(_:now:)``'s rows say: the claim, or `nil` when its checks sent
        /// it to the transaction (a queue with a limit, a lease that ended).
        static func claimResult(fromOneStatement rows: [[SQLValue]]) -> ClaimResult? {
            guard let first = rows.first, first[0].integerValue == 1 else { return nil }
            var claimed = rows.compactMap { row in
                row[3] == .null ? nil : StoredJobRow.record(Array(row[3...]))
            }
            claimed.sort { ($1.priority, $0.runAt, $0.id) < ($0.priority, $1.runAt, $1.id) }
            let wakeTimes = [first[1].integerValue, first[2].integerValue].compactMap { $0 }
            return ClaimResult(
                jobs: claimed, nextWakeAt: wakeTimes.min().map(Date.init(milliseconds:)), rescued: [], queues: [:])
        }

        /// The one statement that completes the attempts of `leases` (the outcome
        /// `JobOutcome/completed`, no effects), moves their jobs to the history table and tells other
        /// processes: atomic on its own. A lease whose job is no longer running under its fence
        /// changes nothing and has no row; the rows are the completed jobs' records.
        ///
        /// The history row is the live row with the fields that completing changes (as
        /// `JobLifecycle`'s `succeeded` and `store` write them) replaced, so that it keeps every
        /// column the two tables share, in their order. `columns` are the history columns its rows
        /// hold: the record's, unless the caller needs less.
        func completeInOneStatement(
            _ leases: [JobLease], now: Int64, columns: String = PostgresSchema.jobColumns
        ) -> (sql: String, arguments: [SQLValue]) {
            let sql = """
                WITH finished AS (
                    DELETE FROM flow_jobs AS job USING unnest($1::bigint[], $2::bigint[]) AS lease(id, fence)
                    WHERE job.id = lease.id AND job.fence = lease.fence AND job.state = 'running'
                    RETURNING jsonb_populate_record(job, jsonb_build_object(
                        'state', 'completed', 'finished_at', $3::bigint, 'lease_expires_at', NULL)) AS job),
                moved AS (
                    INSERT INTO flow_jobs_history SELECT (job).* FROM finished
                    RETURNING \(columns)),
                notified AS (SELECT count(pg_notify($4, $5)) FROM (SELECT 1 FROM moved LIMIT 1) AS any_moved)
                SELECT moved.* FROM moved, notified
                """
            return (
                sql,
                [
                    .text("{" + leases.map { String($0.id.rawValue) }.joined(separator: ",") + "}"),
                    .text("{" + leases.map { String($0.fence) }.joined(separator: ",") + "}"), .integer(now),
                    .text(channel), .text("\(instance) f -"),
                ]
            )
        }

        // MARK: Enqueueing

        /// The statement that finds the live job holding a unique key (`$1`): its rows are the job's
        /// identifier and state.
        static let jobWithUniqueKey = "SELECT id, state FROM flow_jobs WHERE unique_key = $1"

        /// The statement that adds one job, which may have a unique key, unless a live job holds that
        /// key (then it adds nothing and has no row); its row is the new job's identifier.
        static let insertUnlessKeyHeld = """
            INSERT INTO flow_jobs (
                name, queue, payload, state, priority, run_at, max_attempts, unique_key, created_at,
                trace_context, timeout_ms)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING RETURNING id
            """

        /// The arguments of ``insertUnlessKeyHeld`` for `job`, and the state it starts in.
        static func insertArguments(_ job: NewJob, now: Int64) -> (arguments: [SQLValue], state: JobState) {
            let runAt = job.runAt?.milliseconds ?? now
            let lifecycle = JobLifecycle(isDue: runAt <= now, maxAttempts: job.maxAttempts)
            return (
                [
                    .text(job.name), .text(job.queue), .blob(job.payload), .text(lifecycle.state.rawValue),
                    .integer(Int64(job.priority)), .integer(runAt), .integer(Int64(job.maxAttempts)),
                    job.uniqueKey.map(SQLValue.text) ?? .null, .integer(now),
                    StoredJobRow.encodeTraceContext(job.traceContext),
                    job.timeout.map { .integer($0.milliseconds) } ?? .null,
                ],
                lifecycle.state
            )
        }

        /// What a row of ``jobWithUniqueKey`` answers an enqueue of a job with that key.
        static func duplicate(fromRow row: [SQLValue]) -> EnqueuedJob {
            EnqueuedJob(
                id: JobID(rawValue: row[0].integerValue ?? 0), isDuplicate: true,
                state: JobState(rawValue: row[1].textValue ?? "") ?? .available)
        }

        func insert(_ job: NewJob, now: Int64, on session: PostgresSession) throws -> EnqueuedJob {
            let (arguments, state) = Self.insertArguments(job, now: now)
            while true {
                if let key = job.uniqueKey, let row = try session.rows(Self.jobWithUniqueKey, [.text(key)]).first {
                    return Self.duplicate(fromRow: row)
                }
                // A job with the same key committed by another transaction since the check adds
                // nothing here (ON CONFLICT): the loop then answers that job.
                let rows = try session.rows(Self.insertUnlessKeyHeld, arguments)
                guard let row = rows.first else { continue }
                if case .enqueued(let queues)? = session.pendingNotifications.last, queues.contains(job.queue) {
                } else {
                    session.pendingNotifications.append(.enqueued(queues: [job.queue]))
                }
                return EnqueuedJob(id: JobID(rawValue: row[0].integerValue ?? 0), isDuplicate: false, state: state)
            }
        }

        // MARK: Claiming

        /// Rescues every job whose lease ended: a lease that ended is an attempt that ended. SKIP
        /// LOCKED: a job another transaction is rescuing right now is that one's to report.
        func rescueExpiredLeases(maxLeaseExpiries: Int, now: Int64, on session: PostgresSession) throws -> [JobRecord] {
            let expired = try session.rows(
                """
                SELECT \(PostgresSchema.jobColumns) FROM flow_jobs
                WHERE state = 'running' AND lease_expires_at <= $1 ORDER BY id FOR UPDATE SKIP LOCKED
                """,
                [.integer(now)]
            ).map(StoredJobRow.record)
            guard !expired.isEmpty else { return [] }
            let lifecycles = try expired.map { record in
                var lifecycle = record.lifecycle
                try lifecycle.apply(.leaseExpired(maxLeaseExpiries: maxLeaseExpiries))
                return lifecycle
            }
            func list<Value>(_ value: (JobLifecycle) -> Value) -> SQLValue {
                .text("{" + lifecycles.map { String(describing: value($0)) }.joined(separator: ",") + "}")
            }
            // Every rescued row in one statement (as `store` writes one): the rows stay locked for
            // two round trips, not one per job, and claims pass locked rows by (SKIP LOCKED). The
            // jobs keep their run times, and with them their places among the due jobs.
            let rows = try session.rows(
                """
                UPDATE flow_jobs SET state = rescue.new_state, attempt = rescue.new_attempt, fence = rescue.new_fence,
                    lease_expiries = rescue.new_lease_expiries, has_error = rescue.new_has_error,
                    cancel_requested = rescue.new_cancel_requested,
                    finished_at = CASE WHEN rescue.is_terminal THEN $8::bigint END,
                    lease_expires_at = CASE WHEN rescue.new_state = 'running' THEN lease_expires_at END
                FROM unnest($1::bigint[], $2::text[], $3::int[], $4::bigint[], $5::int[], $6::bool[], $7::bool[],
                    $9::bool[])
                    AS rescue(rescued_id, new_state, new_attempt, new_fence, new_lease_expiries, new_has_error,
                        new_cancel_requested, is_terminal)
                WHERE flow_jobs.id = rescue.rescued_id
                RETURNING \(PostgresSchema.jobColumns)
                """,
                [
                    .text("{" + expired.map { String($0.id.rawValue) }.joined(separator: ",") + "}"),
                    .text(Self.arrayLiteral(lifecycles.map(\.state.rawValue))), list(\.attempt), list(\.fence),
                    list(\.leaseExpiries), list { $0.hasRecordedError ? "t" : "f" },
                    list { $0.isCancellationRequested ? "t" : "f" }, .integer(now),
                    list { $0.state.isTerminal ? "t" : "f" },
                ])
            guard rows.count == expired.count else {
                throw PostgresError.server(sqlState: "P0002", message: "expired jobs vanished while locked")
            }
            let rescued = rows.map(StoredJobRow.record).sorted { $0.id.rawValue < $1.id.rawValue }
            let finished = rescued.filter(\.state.isTerminal)
            if !finished.isEmpty {
                try session.run(
                    """
                    WITH moved AS (DELETE FROM flow_jobs WHERE id = ANY($1::bigint[]) RETURNING *)
                    INSERT INTO flow_jobs_history SELECT * FROM moved
                    """,
                    [.text("{" + finished.map { String($0.id.rawValue) }.joined(separator: ",") + "}")])
                for record in finished { session.pendingNotifications.append(.finished(record)) }
            }
            return rescued
        }

        func claim(_ request: ClaimRequest, now: Int64, on session: PostgresSession) throws -> ClaimResult {
            let rescued = try rescueExpiredLeases(maxLeaseExpiries: request.maxLeaseExpiries, now: now, on: session)

            let names: SQLValue = .text(Self.arrayLiteral(request.names.sorted()))
            var claimed: [JobRecord] = []
            var queuesWithFreeSlots: [String] = []
            let leaseEnd = now + request.leaseDuration.milliseconds
            for (queue, wanted) in request.slotsByQueue.sorted(by: { $0.key < $1.key }) where wanted > 0 {
                guard !request.names.isEmpty else { break }
                var slots = wanted
                // A queue's limit across every worker: its row locked, so that claims of the queue
                // count its running jobs one after the other.
                if let limit = try session.rows(
                    "SELECT max_running FROM flow_queues WHERE name = $1 FOR UPDATE", [.text(queue)]
                ).first?.first?.integerValue {
                    let running =
                        try session.rows(
                            "SELECT count(*) FROM flow_jobs WHERE queue = $1 AND state = 'running'", [.text(queue)]
                        ).first?.first?.integerValue ?? 0
                    slots = min(wanted, Int(max(0, limit - running)))
                    guard slots > 0 else { continue }
                }
                // The update mirrors JobLifecycle's `claimed`: attempt and fence up by one, running.
                let rows = try session.rows(
                    """
                    UPDATE flow_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1,
                        lease_expires_at = $1, worker = $2
                    WHERE id IN (
                        SELECT id FROM flow_jobs
                        WHERE queue = $3 AND state IN \(Self.claimableStates) AND run_at <= $4
                            AND name = ANY($5::text[])
                        ORDER BY priority DESC, run_at, id LIMIT $6 FOR UPDATE SKIP LOCKED)
                    RETURNING \(PostgresSchema.jobColumns)
                    """,
                    [
                        // Jobs due within the lookahead too: the worker starts them from a timer.
                        .integer(leaseEnd), .text(request.worker), .text(queue),
                        .integer(now + request.lookahead.milliseconds), names,
                        .integer(Int64(slots)),
                    ])
                claimed += rows.map(StoredJobRow.record)
                if rows.count < slots { queuesWithFreeSlots.append(queue) }
            }
            claimed.sort { ($1.priority, $0.runAt, $0.id) < ($0.priority, $1.runAt, $1.id) }

            var wakeTimes: [Int64] = []
            if !queuesWithFreeSlots.isEmpty && !request.names.isEmpty {
                let rows = try session.rows(
                    """
                    SELECT min(run_at) FROM flow_jobs
                    WHERE state IN \(Self.claimableStates) AND queue = ANY($1::text[]) AND name = ANY($2::text[])
                    """,
                    [.text(Self.arrayLiteral(queuesWithFreeSlots)), names])
                if let time = rows.first?.first?.integerValue { wakeTimes.append(time) }
            }
            // Other workers' leases: when one ends, its job is rescued by the next claim.
            let leaseRows = try session.rows(
                "SELECT min(lease_expires_at) FROM flow_jobs WHERE state = 'running' AND worker IS DISTINCT FROM $1",
                [.text(request.worker)])
            if let time = leaseRows.first?.first?.integerValue { wakeTimes.append(time) }
            var measured: [String: QueueMeasurement] = [:]
            if request.measuresQueues && !request.slotsByQueue.isEmpty {
                let queues = request.slotsByQueue.keys.sorted()
                for queue in queues { measured[queue] = QueueMeasurement(dueCount: 0, oldestDueAt: nil) }
                let rows = try session.rows(
                    """
                    SELECT queue, count(*), min(run_at) FROM flow_jobs
                    WHERE queue = ANY($1::text[]) AND state IN \(Self.claimableStates) AND run_at <= $2
                    GROUP BY queue
                    """,
                    [.text(Self.arrayLiteral(queues)), .integer(now)])
                for row in rows {
                    guard let queue = row[0].textValue else { continue }
                    measured[queue] = QueueMeasurement(
                        dueCount: Int(row[1].integerValue ?? 0),
                        oldestDueAt: row[2].integerValue.map(Date.init(milliseconds:)))
                }
            }
            return ClaimResult(
                jobs: claimed, nextWakeAt: wakeTimes.min().map(Date.init(milliseconds:)), rescued: rescued,
                queues: measured)
        }

        // MARK: Records

        /// The job's record, locked, when it is running under `lease`'s fence; else
        /// `JobStoreError/leaseLost(_:)`.
        func runningRecord(_ lease: JobLease, on session: PostgresSession) throws -> JobRecord {
            guard let record = try liveRecord(lease.id, locking: true, on: session), record.state == .running,
                record.fence == lease.fence
            else { throw JobStoreError.leaseLost(lease) }
            return record
        }

        /// The record of an unfinished job, row-locked for the transaction when `locking`.
        func liveRecord(_ id: JobID, locking: Bool, on session: PostgresSession) throws -> JobRecord? {
            try session.rows(
                "SELECT \(PostgresSchema.jobColumns) FROM flow_jobs WHERE id = $1" + (locking ? " FOR UPDATE" : ""),
                [.integer(id.rawValue)]
            ).first.map(StoredJobRow.record)
        }

        /// The record of a job, unfinished or finished.
        func record(_ id: JobID, on session: PostgresSession) throws -> JobRecord? {
            if let live = try liveRecord(id, locking: false, on: session) { return live }
            return try session.rows(
                "SELECT \(PostgresSchema.jobColumns) FROM flow_jobs_history WHERE id = $1", [.integer(id.rawValue)]
            ).first.map(StoredJobRow.record)
        }

        /// Writes `lifecycle` (and the fields that go with it) over `record`'s row; a job that reached
        /// a terminal state moves to the history table and is published as finished.
        func store(
            _ lifecycle: JobLifecycle, of record: JobRecord, runAt: Int64, lastError: String?, worker: String?,
            now: Int64, on session: PostgresSession
        ) throws -> JobRecord {
            let isRunning = lifecycle.state == .running
            let finishedAt: Int64? = lifecycle.state.isTerminal ? now : nil
            let rows = try session.rows(
                """
                UPDATE flow_jobs SET state = $1, attempt = $2, fence = $3, lease_expiries = $4, has_error = $5,
                    cancel_requested = $6, run_at = $7, last_error = $8, worker = $9, finished_at = $10,
                    lease_expires_at = CASE WHEN $11 THEN lease_expires_at ELSE NULL END
                WHERE id = $12 RETURNING \(PostgresSchema.jobColumns)
                """,
                [
                    .text(lifecycle.state.rawValue), .integer(Int64(lifecycle.attempt)), .integer(lifecycle.fence),
                    .integer(Int64(lifecycle.leaseExpiries)), .text(lifecycle.hasRecordedError ? "t" : "f"),
                    .text(lifecycle.isCancellationRequested ? "t" : "f"), .integer(runAt),
                    lastError.map(SQLValue.text) ?? .null, worker.map(SQLValue.text) ?? .null,
                    finishedAt.map(SQLValue.integer) ?? .null, .text(isRunning ? "t" : "f"),
                    .integer(record.id.rawValue),
                ])
            guard let row = rows.first else {
                throw PostgresError.server(sqlState: "P0002", message: "job \(record.id) vanished")
            }
            let stored = StoredJobRow.record(row)
            if stored.state.isTerminal {
                try session.run(
                    """
                    WITH moved AS (DELETE FROM flow_jobs WHERE id = $1 RETURNING *)
                    INSERT INTO flow_jobs_history SELECT * FROM moved
                    """,
                    [.integer(record.id.rawValue)])
                session.pendingNotifications.append(.finished(stored))
            }
            return stored
        }

    }
}
