#include "CSQLiteJobsReference.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static sqlite3 *db;
static sqlite3_stmt *insert_statement, *claim_statement, *expired_statement, *min_run_statement,
    *min_lease_statement, *record_statement, *finish_statement, *begin_statement, *commit_statement;

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int check(int code, const char *what) {
    if (code != SQLITE_OK && code != SQLITE_DONE && code != SQLITE_ROW) {
        fprintf(stderr, "reference: %s: %s\n", what, sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

static int exec(const char *sql) { return check(sqlite3_exec(db, sql, NULL, NULL, NULL), sql); }

/// Steps a prepared statement that returns no rows (BEGIN, COMMIT), kept prepared as the store keeps its own.
static int step_once(sqlite3_stmt *statement) {
    int code = sqlite3_step(statement);
    sqlite3_reset(statement);
    return check(code, sqlite3_sql(statement));
}

#define BEGIN() step_once(begin_statement)
#define COMMIT() step_once(commit_statement)

#define COLUMNS                                                                                           \
    "id, name, queue, payload, state, priority, run_at, attempt, max_attempts, fence, lease_expires_at, " \
    "worker, lease_expiries, unique_key, last_error, has_error, cancel_requested, created_at, finished_at, " \
    "trace_context, first_attempt_trace_context, timeout_ms"

int reference_jobs_open(const char *path) {
    if (sqlite3_open(path, &db) != SQLITE_OK) return -1;
    // The store's jobs table and indexes as its migrations leave them (SQLiteSchema, version 6), and
    // its connection settings.
    if (exec("PRAGMA journal_mode=WAL") || exec("PRAGMA synchronous=NORMAL") ||
        exec("CREATE TABLE IF NOT EXISTS flow_jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, "
             "queue TEXT NOT NULL, payload BLOB NOT NULL, state TEXT NOT NULL CHECK (state = 'scheduled' OR "
             "state = 'available' OR state = 'running' OR state = 'completed' OR state = 'retryable' OR "
             "state = 'discarded' OR state = 'cancelled' OR state = 'quarantined'), priority INTEGER NOT NULL, "
             "run_at INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, "
             "max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1), "
             "fence INTEGER NOT NULL DEFAULT 0, lease_expires_at INTEGER, worker TEXT, "
             "lease_expiries INTEGER NOT NULL DEFAULT 0, unique_key TEXT, last_error TEXT, "
             "has_error INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0, "
             "created_at INTEGER NOT NULL, finished_at INTEGER, trace_context TEXT, "
             "first_attempt_trace_context TEXT, timeout_ms INTEGER);"
             "CREATE INDEX IF NOT EXISTS flow_jobs_due ON flow_jobs (queue, state, priority DESC, run_at, id);"
             "CREATE INDEX IF NOT EXISTS flow_jobs_leases ON flow_jobs (lease_expires_at) WHERE state = 'running';"
             "CREATE UNIQUE INDEX IF NOT EXISTS flow_jobs_unique_key ON flow_jobs (unique_key) "
             "WHERE unique_key IS NOT NULL AND state IN ('scheduled', 'available', 'running', 'retryable');"))
        return -1;
    const struct {
        sqlite3_stmt **statement;
        const char *sql;
    } statements[] = {
        {&begin_statement, "BEGIN IMMEDIATE"},
        {&commit_statement, "COMMIT"},
        {&insert_statement,
         "INSERT INTO flow_jobs (name, queue, payload, state, priority, run_at, max_attempts, unique_key, created_at, "
         "trace_context, timeout_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"},
        {&expired_statement, "SELECT " COLUMNS " FROM flow_jobs WHERE state = 'running' AND lease_expires_at <= ?"},
        {&claim_statement,
         "UPDATE flow_jobs SET state = 'running', attempt = attempt + 1, fence = fence + 1, lease_expires_at = ?, "
         "worker = ? WHERE id IN (SELECT id FROM flow_jobs WHERE queue = ? AND state IN ('scheduled', 'available', "
         "'retryable') AND run_at <= ? AND name IN (?) ORDER BY priority DESC, run_at, id LIMIT ?) RETURNING " COLUMNS},
        {&min_run_statement,
         "SELECT MIN(run_at) FROM flow_jobs WHERE state IN ('scheduled', 'available', 'retryable') AND queue IN (?) "
         "AND name IN (?)"},
        {&min_lease_statement, "SELECT MIN(lease_expires_at) FROM flow_jobs WHERE state = 'running' AND worker IS NOT ?"},
        {&record_statement, "SELECT " COLUMNS " FROM flow_jobs WHERE id = ?"},
        {&finish_statement,
         "UPDATE flow_jobs SET state = ?, attempt = ?, fence = ?, lease_expiries = ?, has_error = ?, "
         "cancel_requested = ?, run_at = ?, last_error = ?, worker = ?, finished_at = ?, "
         "lease_expires_at = CASE WHEN ? THEN lease_expires_at ELSE NULL END WHERE id = ? RETURNING " COLUMNS},
    };
    for (size_t i = 0; i < sizeof statements / sizeof statements[0]; i++) {
        if (check(sqlite3_prepare_v3(db, statements[i].sql, -1, SQLITE_PREPARE_PERSISTENT, statements[i].statement, NULL),
                  statements[i].sql))
            return -1;
    }
    return 0;
}

void reference_jobs_close(void) {
    sqlite3_stmt *all[] = {insert_statement, claim_statement,  expired_statement, min_run_statement, min_lease_statement,
                           record_statement, finish_statement, begin_statement,   commit_statement};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) sqlite3_finalize(all[i]);
    sqlite3_close(db);
    db = NULL;
}

/// Steps a statement to its end, reading every column of each row as the store decodes them.
static int run(sqlite3_stmt *statement) {
    int code;
    while ((code = sqlite3_step(statement)) == SQLITE_ROW) {
        for (int column = 0; column < sqlite3_column_count(statement); column++) {
            (void)sqlite3_column_bytes(statement, column);
            (void)sqlite3_column_blob(statement, column);
        }
    }
    sqlite3_reset(statement);
    return check(code, "step");
}

static const char payload[] = "{\"n\":1}";

static int insert_one(int64_t now) {
    sqlite3_stmt *s = insert_statement;
    sqlite3_bind_text(s, 1, "noop", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, "default", -1, SQLITE_STATIC);
    sqlite3_bind_blob(s, 3, payload, (int)strlen(payload), SQLITE_STATIC);
    sqlite3_bind_text(s, 4, "available", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, 0);
    sqlite3_bind_int64(s, 6, now);
    sqlite3_bind_int64(s, 7, 20);
    sqlite3_bind_null(s, 8);
    sqlite3_bind_int64(s, 9, now);
    sqlite3_bind_null(s, 10);
    sqlite3_bind_null(s, 11);
    // The new job's id, as the store reads it.
    if (run(s)) return -1;
    (void)sqlite3_last_insert_rowid(db);
    return 0;
}

int64_t reference_jobs_enqueue_each(int count) {
    int64_t start = now_ns();
    for (int i = 0; i < count; i++) {
        if (BEGIN() || insert_one(now_ms()) || COMMIT()) return -1;
    }
    return now_ns() - start;
}

static int enqueue_batched(int count, int batch) {
    for (int done = 0; done < count;) {
        if (BEGIN()) return -1;
        int64_t now = now_ms();
        for (int i = 0; i < batch && done < count; i++, done++) {
            if (insert_one(now)) return -1;
        }
        if (COMMIT()) return -1;
    }
    return 0;
}

int64_t reference_jobs_enqueue_batched(int count, int batch) {
    int64_t start = now_ns();
    if (enqueue_batched(count, batch)) return -1;
    return now_ns() - start;
}

int64_t reference_jobs_end_to_end(int count, int batch, int slots) {
    int64_t start = now_ns();
    if (enqueue_batched(count, batch)) return -1;
    int64_t ids[1024], fences[1024];
    int completed = 0;
    while (completed < count) {
        int64_t now = now_ms();
        if (BEGIN()) return -1;
        sqlite3_bind_int64(expired_statement, 1, now);
        if (run(expired_statement)) return -1;
        sqlite3_stmt *c = claim_statement;
        sqlite3_bind_int64(c, 1, now + 15000);
        sqlite3_bind_text(c, 2, "reference", -1, SQLITE_STATIC);
        sqlite3_bind_text(c, 3, "default", -1, SQLITE_STATIC);
        sqlite3_bind_int64(c, 4, now);
        sqlite3_bind_text(c, 5, "noop", -1, SQLITE_STATIC);
        sqlite3_bind_int64(c, 6, slots);
        int claimed = 0, code;
        while ((code = sqlite3_step(c)) == SQLITE_ROW) {
            for (int column = 0; column < sqlite3_column_count(c); column++) (void)sqlite3_column_blob(c, column);
            ids[claimed] = sqlite3_column_int64(c, 0);
            fences[claimed] = sqlite3_column_int64(c, 9);
            claimed++;
        }
        sqlite3_reset(c);
        if (check(code, "claim")) return -1;
        if (claimed < slots) {
            sqlite3_bind_text(min_run_statement, 1, "default", -1, SQLITE_STATIC);
            sqlite3_bind_text(min_run_statement, 2, "noop", -1, SQLITE_STATIC);
            if (run(min_run_statement)) return -1;
        }
        sqlite3_bind_text(min_lease_statement, 1, "reference", -1, SQLITE_STATIC);
        if (run(min_lease_statement) || COMMIT()) return -1;
        // The no-op handler, then each completion in a transaction of its own.
        for (int i = 0; i < claimed; i++) {
            int64_t done = now_ms();
            if (BEGIN()) return -1;
            sqlite3_bind_int64(record_statement, 1, ids[i]);
            if (run(record_statement)) return -1;
            sqlite3_stmt *f = finish_statement;
            sqlite3_bind_text(f, 1, "completed", -1, SQLITE_STATIC);
            sqlite3_bind_int64(f, 2, 1);
            sqlite3_bind_int64(f, 3, fences[i]);
            sqlite3_bind_int64(f, 4, 0);
            sqlite3_bind_int64(f, 5, 0);
            sqlite3_bind_int64(f, 6, 0);
            sqlite3_bind_int64(f, 7, done);
            sqlite3_bind_null(f, 8);
            sqlite3_bind_text(f, 9, "reference", -1, SQLITE_STATIC);
            sqlite3_bind_int64(f, 10, done);
            sqlite3_bind_int64(f, 11, 0);
            sqlite3_bind_int64(f, 12, ids[i]);
            if (run(f) || COMMIT()) return -1;
            completed++;
        }
        if (claimed == 0) {
            fprintf(stderr, "reference: nothing to claim with %d of %d completed\n", completed, count);
            return -1;
        }
    }
    return now_ns() - start;
}
