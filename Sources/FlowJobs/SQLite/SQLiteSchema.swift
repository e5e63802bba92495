import FlowTimers

/// The store's tables, as numbered migrations: migration `n` takes a database from schema version
/// `n` to `n + 1` (SQLite's `user_version`). Opening a store runs the ones the database lacks; a
/// database with a version beyond the last one is refused.
enum SQLiteSchema {
    static let migrations: [String] = [
        // 1: the jobs table. Times are milliseconds since 1970 (UTC).
        """
        CREATE TABLE flow_jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            queue TEXT NOT NULL,
            payload BLOB NOT NULL,
            state TEXT NOT NULL CHECK (state IN
                ('scheduled', 'available', 'running', 'completed', 'retryable', 'discarded', 'cancelled',
                 'quarantined')),
            priority INTEGER NOT NULL,
            run_at INTEGER NOT NULL,
            attempt INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
            fence INTEGER NOT NULL DEFAULT 0,
            lease_expires_at INTEGER,
            worker TEXT,
            lease_expiries INTEGER NOT NULL DEFAULT 0,
            unique_key TEXT,
            last_error TEXT,
            has_error INTEGER NOT NULL DEFAULT 0,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            finished_at INTEGER
        );
        CREATE INDEX flow_jobs_due ON flow_jobs (queue, state, priority DESC, run_at, id);
        CREATE INDEX flow_jobs_leases ON flow_jobs (state, lease_expires_at);
        CREATE UNIQUE INDEX flow_jobs_unique_key ON flow_jobs (unique_key)
            WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retryable');
        """,
        // 2: queues' concurrency limits across every worker.
        """
        CREATE TABLE flow_queues (
            name TEXT PRIMARY KEY,
            max_running INTEGER NOT NULL CHECK (max_running >= 1)
        );
        """,
        // 3: the trace context of the enqueue, and of the first attempt once it failed, each as the
        // JSON object of a tracer's injected headers.
        """
        ALTER TABLE flow_jobs ADD COLUMN trace_context TEXT;
        ALTER TABLE flow_jobs ADD COLUMN first_attempt_trace_context TEXT;
        """,
        // 4: schedules' state shared by every process, and one permanent record per fired tick: its
        // primary key (schedule, fire time) is what lets a tick enqueue its job only once, even after
        // that job finished (the jobs' unique index covers unfinished jobs only).
        """
        CREATE TABLE flow_schedules (
            name TEXT PRIMARY KEY,
            description TEXT NOT NULL,
            last_fired_at INTEGER,
            next_fire_at INTEGER,
            paused INTEGER NOT NULL DEFAULT 0,
            last_job_id INTEGER,
            deferred_fire_at INTEGER,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE flow_schedule_ticks (
            schedule TEXT NOT NULL,
            fire_at INTEGER NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('enqueued', 'skipped', 'deferred')),
            job_id INTEGER,
            recorded_at INTEGER NOT NULL,
            PRIMARY KEY (schedule, fire_at)
        ) WITHOUT ROWID;
        """,
        // 5: each attempt's time limit given at the enqueue, in milliseconds; NULL for the kind's.
        """
        ALTER TABLE flow_jobs ADD COLUMN timeout_ms INTEGER;
        """,
        // 6: the jobs table rebuilt (same columns, ids and sequence) for a cheaper insert and state
        // change. Its state check compares with each state in turn: a CHECK with an IN list of more
        // than two constants fills a temporary table at every row it checks. The lease index holds
        // running jobs only, the only ones with a lease, so an enqueue updates two indexes, not three.
        """
        CREATE TABLE flow_jobs_rebuilt (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            queue TEXT NOT NULL,
            payload BLOB NOT NULL,
            state TEXT NOT NULL CHECK (
                state = 'scheduled' OR state = 'available' OR state = 'running' OR state = 'completed'
                OR state = 'retryable' OR state = 'discarded' OR state = 'cancelled' OR state = 'quarantined'),
            priority INTEGER NOT NULL,
            run_at INTEGER NOT NULL,
            attempt INTEGER NOT NULL DEFAULT 0,
            max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
            fence INTEGER NOT NULL DEFAULT 0,
            lease_expires_at INTEGER,
            worker TEXT,
            lease_expiries INTEGER NOT NULL DEFAULT 0,
            unique_key TEXT,
            last_error TEXT,
            has_error INTEGER NOT NULL DEFAULT 0,
            cancel_requested INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            finished_at INTEGER,
            trace_context TEXT,
            first_attempt_trace_context TEXT,
            timeout_ms INTEGER
        );
        INSERT INTO flow_jobs_rebuilt (
            id, name, queue, payload, state, priority, run_at, attempt, max_attempts, fence, lease_expires_at, worker,
            lease_expiries, unique_key, last_error, has_error, cancel_requested, created_at, finished_at, trace_context,
            first_attempt_trace_context, timeout_ms)
        SELECT
            id, name, queue, payload, state, priority, run_at, attempt, max_attempts, fence, lease_expires_at, worker,
            lease_expiries, unique_key, last_error, has_error, cancel_requested, created_at, finished_at, trace_context,
            first_attempt_trace_context, timeout_ms
        FROM flow_jobs;
        -- The next id stays past every id ever given, purged jobs' too.
        DELETE FROM sqlite_sequence WHERE name = 'flow_jobs_rebuilt';
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'flow_jobs_rebuilt', seq FROM sqlite_sequence WHERE name = 'flow_jobs';
        DROP TABLE flow_jobs;
        -- The rename alone: the database's own views that name flow_jobs are left as they are, and
        -- name the new table once it has the name.
        PRAGMA legacy_alter_table = ON;
        ALTER TABLE flow_jobs_rebuilt RENAME TO flow_jobs;
        PRAGMA legacy_alter_table = OFF;
        CREATE INDEX flow_jobs_due ON flow_jobs (queue, state, priority DESC, run_at, id);
        CREATE INDEX flow_jobs_leases ON flow_jobs (lease_expires_at) WHERE state = 'running';
        CREATE UNIQUE INDEX flow_jobs_unique_key ON flow_jobs (unique_key)
            WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retryable');
        """,
    ]

    /// The schema version this code writes.
    static var currentVersion: Int { migrations.count }

    /// The columns every query of a whole job reads, in the order ``SQLiteJobStore`` decodes them.
    static let jobColumns = """
        id, name, queue, payload, state, priority, run_at, attempt, max_attempts, fence, lease_expires_at, \
        worker, lease_expiries, unique_key, last_error, has_error, cancel_requested, created_at, finished_at, \
        trace_context, first_attempt_trace_context, timeout_ms
        """

    /// Brings the database to ``currentVersion``, each migration in a transaction of its own.
    static func migrate(
        _ connection: SQLiteConnection, busyRetryLimit: Int, busyBackoff: Backoff, onBusyRetry: (@Sendable (Int) -> Void)?
    ) throws(JobStoreError) {
        while true {
            let rows = try connection.query("PRAGMA user_version")
            let version = Int(rows.first?.first?.integerValue ?? 0)
            if version > currentVersion { throw .newerSchema(found: version, supported: currentVersion) }
            if version == currentVersion { return }
            try SQLiteWriter.withBusyRetry(limit: busyRetryLimit, backoff: busyBackoff, onRetry: onBusyRetry) {
                () throws(JobStoreError) in try connection.run("BEGIN IMMEDIATE")
            }
            do throws(JobStoreError) {
                // Another process may have migrated while this one waited for the lock.
                let again = Int(try connection.query("PRAGMA user_version").first?.first?.integerValue ?? 0)
                if again == version {
                    try connection.run(migrations[version])
                    try connection.run("PRAGMA user_version = \(version + 1)")
                }
                try connection.run("COMMIT")
            } catch {
                try? connection.run("ROLLBACK")
                throw error
            }
        }
    }
}
