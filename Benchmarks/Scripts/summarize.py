#!/usr/bin/env python3
"""Turns the RESULT lines of Benchmarks/run into a Markdown table: the median over rounds of every
metric, the ratio of this library to each reference (the median of the per-round ratios, which a
machine whose load drifts between rounds disturbs less than a ratio of medians), and the goal from
the benchmark issue."""

import os
import platform
import re
import statistics
import subprocess
import sys
from collections import defaultdict

def meets(value, limit):
    """Whether `value` is within `limit`, as the table prints it: a byte count is an average over
    100 000 objects, and allocations the benchmark did not make itself (96.0005 B per future; 64.009 B
    per signal listener, where an array grows alongside) must not turn a met goal into "1.00× over".
    The table prints two decimals of the ratio, so 0.1 % is below what it shows."""
    return value <= limit * (1 + 1e-3)


# (workload, metric): (reference implementation or None for an absolute goal, limit, description)
GOALS = {
    ("P1", "ns/op"): ("nio", 0.7, "≤ 0.7× NIO, at most NIO's allocations"),
    ("P2", "ns/link"): (None, 100, "≤ 100 ns/link"),
    ("P3", "ns/step"): (None, 150, "completes, ≤ 150 ns/step"),
    ("P4", "ns/future"): (None, 200, "≤ 200 ns"),
    ("P5", "ns/task"): ("libuv", 1.5, "≤ 1.5× libuv"),
    ("P6", "ns/task"): ("libuv", 2.0, "≤ 2× libuv"),
    ("P7", "schedule ns/timer"): ("libuv", 1.5, "≤ 1.5× libuv"),
    ("P7", "until last fired s"): ("libuv", 1.2, "≤ 1.2× libuv"),
    ("P7", "cancel ns/timer"): ("libuv", 2.0, "≤ 2× libuv"),
    ("P8", "bytes/pending future"): (None, 208, "≤ 208 B"),
    ("P8", "bytes/pending timer"): (None, 160, "≤ 160 B"),
    ("P8-deferred", "bytes/pending future"): (None, 96, "≤ 96 B"),
    ("P9-queue", "ns/op"): ("dispatch", 1.2, "≤ 1.2× Dispatch"),
    ("P9-loop", "ns/op"): (None, 50, "≤ 50 ns"),
    ("P12", "ns/value"): ("combine", 0.5, "≤ 0.5× OpenCombine, 0 allocs/value"),
    ("P12-fanout", "ns/delivery"): (None, 15, "≤ 15 ns/delivery"),
    ("P12-memory", "bytes/listener"): (None, 64, "≤ 64 B"),
    ("P13-nio-submit", "ns/op"): ("nio", 1.0, "≤ 1.0× NIO's own loop"),
    ("P13-nio-future-map", "ns/op"): ("nio", 1.0, "≤ 1.0× NIO's own loop"),
    ("P14", "datagrams/s"): ("nio", 1.2, "≥ 1.2× NIO"),
    ("P15-chunks", "MB/s"): (("nio", "foundation"), 1.0, "≥ 1.0× the faster"),
    ("P15-whole", "MB/s"): (("nio", "foundation"), 1.0, "≥ 1.0× the faster"),
    ("P16", "µs/spawn"): ("foundation", 1.0, "≤ 1.0× Foundation"),
    ("P17", "ns/resolution"): ("nio", 1.0, "≤ 1.0× NIO"),
    ("P17-connect", "connect by name µs"): ("nio", 1.0, "≤ 1.0× NIO"),
    # Time ≤ 1.5× the detached task's, as a rate: ≥ 1 / 1.5 of its lines per second.
    ("P19-lines-main-actor", "lines/s"): ("detached", 1 / 1.5, "≥ 0.67× detached (time ≤ 1.5×)"),
}

# Metrics where more is better: their goals are floors, not ceilings.
HIGHER_IS_BETTER = {"datagrams/s", "MB/s", "lines/s"}

DESCRIPTIONS = {
    "P1": "promise + 1 map + completion, on the loop, 1M",
    "P2": "one promise, 1M chained maps, build + complete",
    "P3": "recursive flatMap on completed futures, 1M deep (NIO: 10k deep)",
    "P4": "join over 100k pending futures, then complete all",
    "P5": "1M tasks posted from another thread",
    "P6": "1M tasks posted on the loop",
    "P7": "1M random 0–999 ms timers",
    "P8": "memory per pending future with one callback / per pending timer",
    "P8-deferred": "memory per pending `Deferred` with one `upon` closure (to the loop)",
    "P9-queue": "`upon` a filled Deferred to a serial queue, 1M",
    "P9-queue-pending": "a new Deferred, `upon` to a serial queue, then the fill, 1M",
    "P9-loop": "`upon` a filled Deferred to the loop, on the loop, 1M",
    "P12": "one Callbacker-backed signal, 1 listener, 1M values on the loop",
    "P12-fanout": "one signal, 100 listeners, 100k values, on the loop",
    "P12-memory": "memory per idle listener (`onValue` on a Callbacker-backed signal)",
    "P13-flow-to-nio-completed": "FlowNIO: a completed Flow future to an EventLoopFuture, on the NIO loop",
    "P13-flow-to-nio-pending": "FlowNIO: a pending Flow future to an EventLoopFuture, then completed",
    "P13-nio-to-flow-completed": "FlowNIO: a completed EventLoopFuture to a Flow future, on the NIO loop",
    "P13-nio-to-flow-pending": "FlowNIO: a pending EventLoopFuture to a Flow future, then completed",
    "P13-nio-submit": "NIO code on a Flow loop (`FlowNIOEventLoop`): `submit {}` from another thread + `wait()`, 100k",
    "P13-nio-future-map": "NIO code on a Flow loop (`FlowNIOEventLoop`): `makeSucceededFuture(i).map { $0 + 1 }`, on the loop, 1M",
    "P14": "UDP echo on loopback, 1 loop, 16 datagrams of 64 B in flight, 200k echoes",
    "P15-chunks": "reading a 1 GiB file (page cache) in 64 KiB chunks, one after the other",
    "P15-whole": "reading a 1 GiB file (page cache) in one call",
    "P16": "spawning `/bin/true` and collecting its exit, 1,000 times in a row",
    "P17": "resolving `localhost` 10,000 times in a row (NIO: connect by name − by address)",
    "P17-connect": "connecting to `localhost` by name and to its address (a listener on the same loop), 1,000 each",
    "P18-hop": "`UDPSocket.setBroadcast(true)` 200k times: on the loop, from a thread (waits), from a task (`perform`)",
    "P19-lines-main-actor": "1M lines of 64 B read through `connection.lines()` on the main loop, in a `@MainActor` task",
}

NAMES = {
    "libuv": "libuv C", "nio": "NIO", "dispatch": "Dispatch", "flow": "Flow loop.execute",
    "dispatch-capturing": "Dispatch capturing", "combine": "OpenCombine", "asyncstream": "AsyncStream",
    "async": "async/await hop", "foundation": "Foundation", "posix-spawn": "posix_spawn C",
    "flow-thread": "from a thread", "flow-async": "from a task", "detached": "a detached task",
}

# The allocation count reported next to each timed metric.
ALLOCATION_METRIC = {
    "schedule ns/timer": "schedule allocs/timer",
    "cancel ns/timer": "cancel allocs/timer",
    "until last fired s": "none",
    "bytes/pending future": "allocs/pending future",
    "bytes/pending timer": "allocs/pending timer",
    "bytes/listener": "allocs/listener",
    "datagrams/s": "allocs/echo",
    "µs/spawn": "allocs/spawn",
    "ns/resolution": "allocs/resolution",
    "connect by name µs": "allocs/connect by name",
    "connect by address µs": "allocs/connect by address",
}

SUBJECT = {
    "P8-deferred": "deferred", "P9-queue": "deferred", "P9-queue-pending": "deferred", "P9-loop": "deferred",
    "P19-lines-main-actor": "main-actor",
}
ORDER = ["flow", "deferred", "libuv", "nio", "foundation", "posix-spawn", "dispatch", "combine", "asyncstream"]


def workload_key(name):
    match = re.match(r"P(\d+)(.*)", name)
    return (int(match.group(1)), match.group(2)) if match else (999, name)


def machine():
    def run(command):
        try:
            return subprocess.run(command, shell=True, capture_output=True, text=True).stdout.strip()
        except OSError:
            return "?"

    model = run("lscpu | sed -n 's/^Model name: *//p' | head -1")
    memory = run("free -h | awk '/^Mem:/ {print $2}'")
    swift = run("swift --version 2>&1 | head -1")
    libuv = run("pkg-config --modversion libuv")
    return [
        f"- CPU: {model}, {run('nproc')} cores (`nproc`)",
        f"- Memory: {memory}",
        f"- OS: {platform.platform()}",
        f"- Swift: {swift}",
        f"- libuv: {libuv}",
    ]


def format_value(value, metric):
    if metric.endswith(" s"):
        return f"{value:.3f}"
    if "allocs" in metric or metric.endswith("µs"):
        return f"{value:.2f}"
    return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def main(path):
    samples = defaultdict(list)
    by_round = defaultdict(dict)
    crashes = []
    with open(path) as results:
        for line in results:
            fields = line.rstrip("\n").split("\t")
            if fields[0] == "RESULT":
                _, workload, implementation, metric, value = fields[:5]
                samples[(workload, implementation, metric)].append(float(value))
                if len(fields) > 5:
                    by_round[(workload, implementation, metric)][fields[5]] = float(value)
            elif fields[0] == "CRASH":
                crashes.append(fields[1:])

    def ratio(workload, subject, other, metric):
        """The median of the per-round ratios, or the ratio of medians without round numbers."""
        mine, theirs = by_round[(workload, subject, metric)], by_round[(workload, other, metric)]
        paired = [mine[r] / theirs[r] for r in mine if r in theirs and theirs[r] > 0]
        if paired:
            return statistics.median(paired)
        return medians[(workload, subject, metric)] / medians[(workload, other, metric)]

    shown = {}
    medians = {key: statistics.median(values) for key, values in samples.items()}
    rounds = max((len(values) for values in samples.values()), default=0)

    print("\n".join(machine()))
    print()
    print(f"Medians of {rounds} interleaved rounds. Ratio = this library ÷ reference, the median of the "
          "per-round ratios (lower is better).")
    print()
    print("| # | workload | metric | this library | references | ratio | goal | met "
          "| allocs/op, this library | allocs/op, references |")
    print("|---|---|---|---:|---|---|---|---|---:|---|")

    workloads = sorted({key[0] for key in medians if key[0] != "P3-nio-1M"}, key=workload_key)
    for workload in workloads:
        subject = SUBJECT.get(workload, "flow")
        metrics = []
        for key in medians:
            if key[0] == workload and "allocs" not in key[2] and key[2] not in metrics:
                metrics.append(key[2])
        first = True
        for metric in metrics:
            if (workload, subject, metric) not in medians:
                continue
            value = medians[(workload, subject, metric)]
            others = sorted(
                {key[1] for key in medians if key[0] == workload and key[2] == metric and key[1] != subject},
                key=lambda name: ORDER.index(name) if name in ORDER else 99)
            references = " · ".join(
                f"{NAMES.get(other, other)} {format_value(medians[(workload, other, metric)], metric)}"
                for other in others)
            ratios = " · ".join(
                f"{ratio(workload, subject, other, metric):.2f}× {NAMES.get(other, other)}"
                for other in others if medians[(workload, other, metric)] > 0)
            goal_text, met = "", ""
            goal = GOALS.get((workload, metric))
            if goal:
                reference, limit, goal_text = goal
                higher = metric in HIGHER_IS_BETTER
                if isinstance(reference, tuple):
                    present = [name for name in reference if (workload, name, metric) in medians]
                    if present:
                        goal_ratio = min(ratio(workload, subject, name, metric) for name in present)
                        met = "yes" if goal_ratio >= limit else f"no: {goal_ratio:.2f}× the faster"
                elif reference is None:
                    met = "yes" if meets(value, limit) else f"no: {value / limit:.2f}× over"
                elif higher and (workload, reference, metric) in medians:
                    goal_ratio = ratio(workload, subject, reference, metric)
                    met = "yes" if goal_ratio >= limit else f"no: {goal_ratio:.2f}× {NAMES.get(reference, reference)}"
                elif (workload, reference, metric) in medians:
                    goal_ratio = ratio(workload, subject, reference, metric)
                    met = "yes" if meets(goal_ratio, limit) else f"no: {goal_ratio / limit:.2f}× over"
            allocation_metric = ALLOCATION_METRIC.get(metric, "allocs/op")
            own_allocations = medians.get((workload, subject, allocation_metric))
            reference_allocations = " · ".join(
                f"{NAMES.get(other, other)} {format_value(medians[(workload, other, allocation_metric)], 'allocs')}"
                for other in others if (workload, other, allocation_metric) in medians)
            if allocation_metric in shown.setdefault(workload, set()):
                own_allocations, reference_allocations = None, ""
            shown[workload].add(allocation_metric)
            label = f"{workload} | {DESCRIPTIONS.get(workload, '')}" if first else " | "
            first = False
            own_text = format_value(own_allocations, "allocs") if own_allocations is not None else ""
            print(f"| {label} | {metric} | {format_value(value, metric)} | {references} | {ratios} "
                  f"| {goal_text} | {met} | {own_text} | {reference_allocations} |")

    for workload, implementation, status in crashes:
        note = " (expected: recursion overflows the stack)" if workload == "P3-nio-1M" else ""
        print(f"\n{workload} {implementation}: {status}{note}")
    if any(key[0] == "P3-nio-1M" for key in medians):
        print("\nP3-nio-1M nio: completed (not expected)")


if __name__ == "__main__":
    main(sys.argv[1])
