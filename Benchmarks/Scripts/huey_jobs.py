"""The jobs benchmarks' huey anchor (PyPI `huey`, SqliteHuey): J1 enqueues one per transaction, and
J2 enqueues then drains the queue with one in-process worker loop (dequeue, execute: what huey's
consumer does per task, without its thread pool's polling). WAL and synchronous=NORMAL, as FlowJobs.

    python3 huey_jobs.py J1|J2 COUNT DIRECTORY

Prints `jobs_per_second <value>`.
"""
import os
import sys
import time

from huey import SqliteHuey

workload, count, directory = sys.argv[1], int(sys.argv[2]), sys.argv[3]
huey = SqliteHuey("bench", filename=os.path.join(directory, "huey.db"), journal_mode="wal")
huey.storage.conn.execute("pragma synchronous=1")


@huey.task()
def noop():
    pass


start = time.perf_counter()
for _ in range(count):
    noop()
if workload == "J2":
    done = 0
    while done < count:
        task = huey.dequeue()
        if task is None:
            break
        huey.execute(task)
        done += 1
    if done != count:
        sys.exit(f"huey drained {done} of {count}")
elapsed = time.perf_counter() - start
print(f"jobs_per_second {count / elapsed:.1f}")
