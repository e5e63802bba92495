extension PostgresSchema {
    /// Migration 2: schedules' state shared by every process, and one record per fired tick. The tick's
    /// primary key (schedule, fire time) is what lets a tick enqueue its job only once, even after that
    /// job finished and moved to the history table (the jobs' unique index covers `flow_jobs` only),
    /// and even when two processes fire the same tick at once: the second one's insert of the key waits
    /// for the first's commit and then fails, rolling its job back with it.
    static let schedulesMigration = """
        CREATE TABLE flow_schedules (
            name TEXT PRIMARY KEY,
            description TEXT NOT NULL,
            last_fired_at BIGINT,
            next_fire_at BIGINT,
            paused BOOLEAN NOT NULL DEFAULT false,
            last_job_id BIGINT,
            deferred_fire_at BIGINT,
            created_at BIGINT NOT NULL
        );
        CREATE TABLE flow_schedule_ticks (
            schedule TEXT NOT NULL,
            fire_at BIGINT NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('enqueued', 'skipped', 'deferred')),
            job_id BIGINT,
            recorded_at BIGINT NOT NULL,
            PRIMARY KEY (schedule, fire_at)
        );
        """
}
