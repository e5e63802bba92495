"""The jobs benchmarks' procrastinate anchor on PostgreSQL (PyPI `procrastinate`, with psycopg 3),
issue #40.

    python3 procrastinate_jobs.py URL J1|J1-batch|J2 COUNT [CONNECTIONS]

URL names an empty database; the script applies procrastinate's schema to it first.
- J1: COUNT `defer_async` calls, one job per transaction.
- J1-batch: COUNT jobs in `batch_defer_async` calls of 1,000 (one transaction each).
- J2: COUNT jobs deferred in batches of 100, then one worker with concurrency CONNECTIONS (its pool
  holds CONNECTIONS connections for fetching and finishing jobs, plus one for LISTEN) runs them until
  the queue is empty (`wait=False`); the task is a no-op coroutine. Finished jobs stay in the jobs
  table with their status, procrastinate's default.

Prints `jobs_per_second VALUE`.
"""
import asyncio
import logging
import sys
import time

from procrastinate import App, PsycopgConnector

logging.disable(logging.WARNING)


def make_app(url, connections):
    app = App(connector=PsycopgConnector(conninfo=url, min_size=1, max_size=connections + 1))
    handled = {"count": 0}

    @app.task(name="noop", queue="bench")
    async def noop():
        handled["count"] += 1

    return app, noop, handled


async def run(url, workload, count, connections):
    app, noop, handled = make_app(url, connections)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        batch = {"J1": 1, "J1-batch": 1000, "J2": 100}[workload]
        start = time.perf_counter()
        done = 0
        while done < count:
            rows = min(batch, count - done)
            if rows == 1:
                await noop.defer_async()
            else:
                await noop.batch_defer_async(*([{}] * rows))
            done += rows
        if workload == "J2":
            await app.run_worker_async(
                queues=["bench"],
                concurrency=connections,
                wait=False,
                install_signal_handlers=False,
                listen_notify=False,
            )
            if handled["count"] != count:
                sys.exit(f"procrastinate ran {handled['count']} of {count} jobs")
        return time.perf_counter() - start


def main():
    url, workload, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    connections = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    if workload not in ("J1", "J1-batch", "J2"):
        sys.exit(f"unknown workload {workload}")
    elapsed = asyncio.run(run(url, workload, count, connections))
    print(f"jobs_per_second {count / elapsed:.1f}")


if __name__ == "__main__":
    main()
