"""The jobs benchmarks' pgqueuer anchor on PostgreSQL (PyPI `pgqueuer`, with asyncpg), issue #40.

    python3 pgqueuer_jobs.py URL J1|J1-batch|J2|J3 COUNT [CONNECTIONS]

URL names an empty database; the script installs pgqueuer's schema into it first.
- J1: COUNT enqueues, one per transaction (each `Queries.enqueue` call commits on its own).
- J1-batch: COUNT enqueues in calls of 1,000 jobs (one statement, one transaction each).
- J2: COUNT jobs enqueued in calls of 100, then drained by CONNECTIONS QueueManagers in this process,
  each with its own connection, in pgqueuer's drain mode (batches of 10, its default); the handler is
  a no-op and the time runs until the last QueueManager has logged its jobs as done.
- J3: an idle QueueManager in another process, woken by pgqueuer's LISTEN/NOTIFY (its poll is set to
  a minute, so only the notification wakes it); this process enqueues COUNT jobs one at a time, each
  after the worker has reported the previous one, and the latency is from the enqueue's commit (the
  call's return) to the handler's start.

Prints `jobs_per_second VALUE`, or for J3 `p50_ms`, `p99_ms` and the same from the enqueue call.
"""
import asyncio
import multiprocessing
import statistics
import sys
import time
from datetime import timedelta

import asyncpg
from pgqueuer.db import AsyncpgDriver
from pgqueuer.qm import QueueManager
from pgqueuer.queries import Queries
from pgqueuer.types import QueueExecutionMode


async def connect(url):
    return await asyncpg.connect(url)


async def install(url):
    connection = await connect(url)
    await Queries(AsyncpgDriver(connection)).install()
    await connection.close()


async def enqueue(url, count, batch):
    connection = await connect(url)
    queries = Queries(AsyncpgDriver(connection))
    start = time.perf_counter()
    done = 0
    while done < count:
        rows = min(batch, count - done)
        if rows == 1:
            await queries.enqueue("noop", None)
        else:
            await queries.enqueue(["noop"] * rows, [None] * rows, [0] * rows)
        done += rows
    elapsed = time.perf_counter() - start
    await connection.close()
    return elapsed


async def drain(url, count, connections):
    handled = 0

    async def worker():
        manager = QueueManager(Queries(AsyncpgDriver(await connect(url))))

        @manager.entrypoint("noop")
        async def noop(job):
            nonlocal handled
            handled += 1

        await manager.run(mode=QueueExecutionMode.drain, batch_size=10)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.perf_counter() - start
    if handled != count:
        sys.exit(f"pgqueuer handled {handled} of {count} jobs")
    return elapsed


def idle_worker(url, reports, ready):
    async def main():
        manager = QueueManager(Queries(AsyncpgDriver(await connect(url))))

        @manager.entrypoint("latency")
        async def latency(job):
            reports.put((job.id, time.time()))

        ready.set()
        await manager.run(dequeue_timeout=timedelta(seconds=60), batch_size=1)

    asyncio.run(main())


async def latency(url, count):
    reports = multiprocessing.Queue()
    ready = multiprocessing.Event()
    process = multiprocessing.Process(target=idle_worker, args=(url, reports, ready), daemon=True)
    process.start()
    ready.wait(30)
    await asyncio.sleep(1)  # the worker's LISTEN is issued as its run starts
    connection = await connect(url)
    queries = Queries(AsyncpgDriver(connection))
    from_commit, from_call = [], []
    loop = asyncio.get_running_loop()
    for _ in range(count):
        await asyncio.sleep(0.02)  # the worker idle again: waiting in its LISTEN
        called = time.time()
        (job_id,) = await queries.enqueue("latency", None)
        committed = time.time()
        reported_id, started = await loop.run_in_executor(None, reports.get, True, 30)
        if reported_id != job_id:
            sys.exit(f"pgqueuer ran job {reported_id}, expected {job_id}")
        from_commit.append((started - committed) * 1000)
        from_call.append((started - called) * 1000)
    await connection.close()
    process.terminate()
    process.join(10)
    return from_commit, from_call


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    url, workload, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    connections = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    asyncio.run(install(url))
    if workload == "J1":
        elapsed = asyncio.run(enqueue(url, count, 1))
        print(f"jobs_per_second {count / elapsed:.1f}")
    elif workload == "J1-batch":
        elapsed = asyncio.run(enqueue(url, count, 1000))
        print(f"jobs_per_second {count / elapsed:.1f}")
    elif workload == "J2":
        enqueued = asyncio.run(enqueue(url, count, 100))
        drained = asyncio.run(drain(url, count, connections))
        print(f"jobs_per_second {count / (enqueued + drained):.1f}")
    elif workload == "J3":
        from_commit, from_call = asyncio.run(latency(url, count))
        print(f"p50_ms {statistics.median(from_commit):.3f}")
        print(f"p99_ms {percentile(from_commit, 0.99):.3f}")
        print(f"p50_ms_from_call {statistics.median(from_call):.3f}")
        print(f"p99_ms_from_call {percentile(from_call, 0.99):.3f}")
    else:
        sys.exit(f"unknown workload {workload}")


if __name__ == "__main__":
    main()
