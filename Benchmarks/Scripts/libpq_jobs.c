/*
 * The jobs benchmarks' plain libpq loop on PostgreSQL (issue #40): the SQL a durable queue needs, one
 * statement per transaction, prepared once per connection, with nothing around it. It is the
 * reference that FlowJobsPostgres's figures are divided by, as CSQLiteJobsReference is for the SQLite
 * store. Built by Benchmarks/jobs-postgres (cc -O2 libpq_jobs.c -lpq -lpthread).
 *
 *   libpq_jobs URL setup                      create the tables (dropping earlier ones)
 *   libpq_jobs URL enqueue COUNT BATCH        insert COUNT jobs, BATCH per transaction (1: one by one)
 *   libpq_jobs URL drain COUNT CONNECTIONS    claim, run (a no-op) and complete jobs until COUNT are
 *                                             done or the queue is empty, CONNECTIONS threads each
 *                                             with its own connection
 *   libpq_jobs URL J2 COUNT CONNECTIONS       enqueue COUNT in transactions of 100, then drain them
 *   libpq_jobs URL statement COUNT FILE       run FILE's statement COUNT times, one per transaction:
 *                                             the store's own enqueue (JobsPostgresBenchmarks writes
 *                                             it: the SQL, then each parameter as N for NULL or V and
 *                                             its text, each ended by a NUL byte) on its own tables
 *
 * Each prints `jobs_per_second VALUE` (J2: over the enqueue and the drain together; drain: `done N`
 * too). A claim is `FOR UPDATE SKIP LOCKED` by priority then due time, marking the job running with
 * a lease; a completion moves the job to the history table in one statement. Every transaction
 * commits durably (synchronous_commit as the server has it: on in the benchmarks).
 */
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *url;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static PGconn *connect_or_die(void) {
    PGconn *connection = PQconnectdb(url);
    if (PQstatus(connection) != CONNECTION_OK) {
        fprintf(stderr, "libpq_jobs: cannot connect: %s", PQerrorMessage(connection));
        exit(1);
    }
    return connection;
}

static void check(PGconn *connection, PGresult *result, ExecStatusType expected, const char *what) {
    if (PQresultStatus(result) != expected) {
        fprintf(stderr, "libpq_jobs: %s: %s", what, PQerrorMessage(connection));
        exit(1);
    }
}

static void run(PGconn *connection, const char *sql) {
    PGresult *result = PQexec(connection, sql);
    check(connection, result, PGRES_COMMAND_OK, sql);
    PQclear(result);
}

static void prepare(PGconn *connection, const char *name, const char *sql) {
    PGresult *result = PQprepare(connection, name, sql, 0, NULL);
    check(connection, result, PGRES_COMMAND_OK, name);
    PQclear(result);
}

static void setup(void) {
    PGconn *connection = connect_or_die();
    run(connection, "set client_min_messages = warning");
    run(connection, "drop table if exists plain_jobs, plain_jobs_done");
    run(connection,
        "create table plain_jobs ("
        " id bigserial primary key, queue text not null, priority int not null default 0,"
        " run_at timestamptz not null default now(), state smallint not null default 0,"
        " attempts int not null default 0, lease_until timestamptz, payload bytea not null)"
        " with (fillfactor = 70)");
    run(connection,
        "create index plain_jobs_claim on plain_jobs (queue, priority desc, run_at, id) where state = 0");
    run(connection,
        "create table plain_jobs_done ("
        " id bigint primary key, queue text not null, attempts int not null, payload bytea not null,"
        " finished_at timestamptz not null)");
    PQfinish(connection);
}

/* Inserts count jobs, batch per transaction: one prepared insert, or one insert of batch rows. */
static double enqueue(PGconn *connection, long count, long batch) {
    prepare(connection, "insert_one",
            "insert into plain_jobs (queue, payload) values ($1, $2::bytea) returning id");
    prepare(connection, "insert_many",
            "insert into plain_jobs (queue, payload) select $1, $2::bytea from generate_series(1, $3::int)");
    double start = now_seconds();
    for (long done = 0; done < count;) {
        long rows = count - done < batch ? count - done : batch;
        PGresult *result;
        if (rows == 1) {
            const char *values[2] = {"default", "\\x7b7d"};
            result = PQexecPrepared(connection, "insert_one", 2, values, NULL, NULL, 0);
            check(connection, result, PGRES_TUPLES_OK, "insert_one");
        } else {
            char rows_text[32];
            snprintf(rows_text, sizeof rows_text, "%ld", rows);
            const char *values[3] = {"default", "\\x7b7d", rows_text};
            result = PQexecPrepared(connection, "insert_many", 3, values, NULL, NULL, 0);
            check(connection, result, PGRES_COMMAND_OK, "insert_many");
        }
        PQclear(result);
        done += rows;
    }
    return now_seconds() - start;
}

static atomic_long claimed;
static long drain_limit;

static void *drain_worker(void *unused) {
    (void)unused;
    PGconn *connection = connect_or_die();
    prepare(connection, "claim",
            "update plain_jobs set state = 1, attempts = attempts + 1,"
            " lease_until = now() + interval '30 seconds'"
            " where id = (select id from plain_jobs where queue = $1 and state = 0 and run_at <= now()"
            " order by priority desc, run_at, id for update skip locked limit 1)"
            " returning id, payload");
    prepare(connection, "complete",
            "with finished as (delete from plain_jobs where id = $1::bigint and state = 1"
            " returning id, queue, attempts, payload)"
            " insert into plain_jobs_done select id, queue, attempts, payload, now() from finished");
    for (;;) {
        if (atomic_fetch_add(&claimed, 1) >= drain_limit) {
            break;
        }
        const char *claim_values[1] = {"default"};
        PGresult *result = PQexecPrepared(connection, "claim", 1, claim_values, NULL, NULL, 0);
        check(connection, result, PGRES_TUPLES_OK, "claim");
        if (PQntuples(result) == 0) {
            /* Nothing left that another worker has not locked: this worker is done. */
            PQclear(result);
            atomic_fetch_sub(&claimed, 1);
            break;
        }
        char id[32];
        snprintf(id, sizeof id, "%s", PQgetvalue(result, 0, 0));
        PQclear(result);
        /* The job itself: a no-op. */
        const char *complete_values[1] = {id};
        result = PQexecPrepared(connection, "complete", 1, complete_values, NULL, NULL, 0);
        check(connection, result, PGRES_COMMAND_OK, "complete");
        if (strcmp(PQcmdTuples(result), "1") != 0) {
            fprintf(stderr, "libpq_jobs: job %s was not running when completed\n", id);
            exit(1);
        }
        PQclear(result);
    }
    PQfinish(connection);
    return NULL;
}

/* Returns the seconds the drain took; *done is the number of jobs completed. */
static double drain(long count, int connections, long *done) {
    pthread_t threads[connections];
    atomic_store(&claimed, 0);
    drain_limit = count;
    double start = now_seconds();
    for (int index = 0; index < connections; index++) {
        pthread_create(&threads[index], NULL, drain_worker, NULL);
    }
    for (int index = 0; index < connections; index++) {
        pthread_join(threads[index], NULL);
    }
    double elapsed = now_seconds() - start;
    long total = atomic_load(&claimed);
    *done = total < count ? total : count;
    return elapsed;
}

/* Runs the statement in `path` `count` times on one connection, prepared once, each its own
   transaction; prints the rate. */
static int run_statement_file(long count, const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) {
        fprintf(stderr, "libpq_jobs: cannot read %s\n", path);
        return 1;
    }
    static char contents[1 << 20];
    size_t size = fread(contents, 1, sizeof contents - 1, file);
    fclose(file);
    contents[size] = 0;
    const char *sql = contents;
    const char *values[64];
    int parameters = 0;
    for (size_t at = strlen(sql) + 1; at < size; at += strlen(contents + at) + 1) {
        if (parameters == 64) {
            fprintf(stderr, "libpq_jobs: more than 64 parameters in %s\n", path);
            return 1;
        }
        values[parameters++] = contents[at] == 'N' ? NULL : contents + at + 1;
    }
    PGconn *connection = connect_or_die();
    PGresult *prepared = PQprepare(connection, "store_statement", sql, parameters, NULL);
    check(connection, prepared, PGRES_COMMAND_OK, "the store's statement");
    PQclear(prepared);
    double start = now_seconds();
    for (long done = 0; done < count; done++) {
        PGresult *result = PQexecPrepared(connection, "store_statement", parameters, values, NULL, NULL, 0);
        if (PQresultStatus(result) != PGRES_TUPLES_OK) check(connection, result, PGRES_COMMAND_OK, "the store's statement");
        PQclear(result);
    }
    double elapsed = now_seconds() - start;
    PQfinish(connection);
    printf("jobs_per_second %.1f\n", (double)count / elapsed);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: libpq_jobs URL setup | enqueue COUNT BATCH | drain COUNT CONNECTIONS | J2 COUNT CONNECTIONS | statement COUNT FILE\n");
        return 2;
    }
    url = argv[1];
    const char *workload = argv[2];
    if (strcmp(workload, "setup") == 0) {
        setup();
        return 0;
    }
    if (strcmp(workload, "statement") == 0) {
        if (argc != 5 || atol(argv[3]) < 1) {
            fprintf(stderr, "libpq_jobs: statement takes a positive COUNT and a FILE\n");
            return 2;
        }
        return run_statement_file(atol(argv[3]), argv[4]);
    }
    if (argc != 5) {
        fprintf(stderr, "libpq_jobs: %s takes COUNT and a second number\n", workload);
        return 2;
    }
    long count = atol(argv[3]);
    long second = atol(argv[4]);
    if (count < 1 || second < 1 || second > 1000000) {
        fprintf(stderr, "libpq_jobs: COUNT and the second number must be positive\n");
        return 2;
    }
    if (strcmp(workload, "enqueue") == 0) {
        PGconn *connection = connect_or_die();
        double elapsed = enqueue(connection, count, second);
        PQfinish(connection);
        printf("jobs_per_second %.1f\n", (double)count / elapsed);
    } else if (strcmp(workload, "drain") == 0) {
        long done;
        double elapsed = drain(count, (int)second, &done);
        printf("jobs_per_second %.1f\ndone %ld\n", (double)done / elapsed, done);
    } else if (strcmp(workload, "J2") == 0) {
        PGconn *connection = connect_or_die();
        double enqueued = enqueue(connection, count, 100);
        PQfinish(connection);
        long done;
        double drained = drain(count, (int)second, &done);
        if (done != count) {
            fprintf(stderr, "libpq_jobs: drained %ld of %ld jobs\n", done, count);
            return 1;
        }
        printf("jobs_per_second %.1f\n", (double)count / (enqueued + drained));
    } else {
        fprintf(stderr, "libpq_jobs: unknown workload %s\n", workload);
        return 2;
    }
    return 0;
}
