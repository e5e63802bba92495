#ifndef C_SQLITE_JOBS_REFERENCE_H
#define C_SQLITE_JOBS_REFERENCE_H

#include <stdint.h>

/// The jobs benchmarks' "plain loop" anchor: FlowJobs' own SQL statements on its own table, run in a
/// C loop straight through sqlite3, with no library around them. Each returns the elapsed
/// nanoseconds, or -1 on an SQLite error (printed to stderr).

/// Opens `path` (created, WAL, synchronous=NORMAL) with FlowJobs' schema; 0 on success.
int reference_jobs_open(const char *path);
/// Closes the database opened by reference_jobs_open.
void reference_jobs_close(void);
/// J1: `count` enqueues, one transaction each.
int64_t reference_jobs_enqueue_each(int count);
/// J1 batched: `count` enqueues, `batch` per transaction.
int64_t reference_jobs_enqueue_batched(int count, int batch);
/// J2: enqueue `count` jobs `batch` per transaction, then claim up to `slots` per transaction and
/// complete each claimed job in its own transaction, until all are completed.
int64_t reference_jobs_end_to_end(int count, int batch, int slots);

#endif
