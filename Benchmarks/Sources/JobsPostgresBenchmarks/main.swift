// J1-pg-J3-pg and the scale rows (issue #40): FlowJobsPostgres's store and worker on a PostgreSQL server.
// Benchmarks/jobs-postgres runs each in a process of its own on a fresh database, beside the anchors
// (pgqueuer, procrastinate, the plain libpq loop).
//
//     JobsPostgresBenchmarks URL J1 COUNT                 COUNT enqueues, each awaited before the next
//                                                         from a running loop
//     JobsPostgresBenchmarks URL J1-runs COUNT            the same, through a run(until:) per enqueue
//     JobsPostgresBenchmarks URL J1-batch COUNT           COUNT enqueues in calls of 1,000 jobs
//     JobsPostgresBenchmarks URL J2 COUNT CONNECTIONS [async]
//                                                         COUNT jobs enqueued in calls of 100, then run
//                                                         (a no-op) by one worker whose store has
//                                                         CONNECTIONS connections; `async`: the store's
//                                                         sessions commit with synchronous_commit=off
//     JobsPostgresBenchmarks URL enqueue COUNT            COUNT jobs in calls of 100 (the scale rows' queue)
//     JobsPostgresBenchmarks URL drain COUNT CONNECTIONS  runs jobs until the queue is empty (as one of
//                                                         several processes draining one queue); COUNT
//                                                         is ignored
//     JobsPostgresBenchmarks URL J3 COUNT                 an idle worker in a child process (J3-worker),
//                                                         woken by LISTEN/NOTIFY: from each enqueue's
//                                                         commit here to the handler's start there
//     JobsPostgresBenchmarks URL statement 1 FILE         writes the store's one-job enqueue statement and
//                                                         its parameters (as text) to FILE, once the store
//                                                         has made its tables: what the plain libpq loop
//                                                         runs for the J1-pg row of the same SQL
//
// Prints `<metric> <value>` lines (drain: `done N` too).

import Flow
import FlowJobs
import FlowJobsPostgres
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Noop: Codable, Sendable {
    var n: Int
}

let noop = JobKind<Noop>(name: "noop")

func printError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

func emit(_ metric: String, _ value: Double) {
    print("\(metric) \(String(format: "%.4f", value))")
    fflush(nil)
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine.
func monotonicNanoseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

func seconds(since start: Int64) -> Double { Double(monotonicNanoseconds() - start) / 1e9 }

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
}

/// A future completed by `complete()` from any thread: the end of a run.
final class Finish: Sendable {
    private final class Slot: Sendable {
        let completion = Mutex<(@Sendable (Result<Void>) -> Void)?>(nil)
    }

    private let slot = Slot()
    let future: Future<Void>

    init() {
        let slot = slot
        future = Future<Void>(on: .none) { completion in
            slot.completion.withLock { $0 = completion }
            return NilDisposer()
        }
    }

    func complete() { slot.completion.withLock { $0 }?(.success(())) }
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, let count = Int(arguments[3]) else {
    printError(
        "usage: JobsPostgresBenchmarks URL <J1|J1-runs|J1-batch|J2|enqueue|drain|J3|J3-worker|statement> COUNT [CONNECTIONS [async] | FILE]\n")
    exit(64)
}
let url = arguments[1], workload = arguments[2]
let connections = arguments.count > 4 ? Int(arguments[4]) ?? 4 : 4
let synchronousCommit = !(arguments.count > 5 && arguments[5] == "async")
let loop = EventLoop.main
let store = try loop.run(
    until: PostgresJobStore.open(
        url: url, on: loop,
        configuration: .init(maxConnections: connections, synchronousCommit: synchronousCommit)))
let job = try noop.newJob(Noop(n: 1), clock: .system)

/// A started worker of `store`, running no-ops, calling `onFinished` after each attempt ends.
func startWorker(concurrency: Int, onFinished: @escaping @Sendable () -> Void) -> JobWorker {
    let worker = JobWorker(
        store: store, scheduler: loop.scheduler,
        configuration: .init(
            concurrencyByQueue: ["default": concurrency],
            onEvent: { event in if case .attemptFinished = event { onFinished() } }))
    worker.register(noop) { _, _ in Future(()) }
    worker.start()
    return worker
}

/// Enqueues `count` jobs in calls of `batch`, each call awaited before the next.
func enqueue(_ count: Int, batch: Int) throws {
    let jobs = Array(repeating: job, count: batch)
    var done = 0
    while done < count {
        let rows = min(batch, count - done)
        _ = try loop.run(until: store.enqueue(rows == batch ? jobs : Array(jobs.prefix(rows))))
        done += rows
    }
}

switch workload {
case "statement":
    // The statement and its parameters, each ended by a NUL byte: the SQL, then per parameter a tag
    // (N: NULL, otherwise V) and its text form as PostgreSQL reads it (bytes as `\x` and hex digits).
    let insertion = PostgresJobInsertion(jobs: [job])  // the store's default schema, as opened above
    var file = Data(insertion.sql.utf8) + [0]
    for argument in insertion.arguments {
        switch argument {
        case .null: file += Data("N".utf8)
        case .integer(let value): file += Data("V\(value)".utf8)
        case .real(let value): file += Data("V\(value)".utf8)
        case .text(let value): file += Data("V\(value)".utf8)
        case .blob(let value): file += Data(("V\\x" + value.map { String(format: "%02x", $0) }.joined()).utf8)
        }
        file.append(0)
    }
    try file.write(to: URL(fileURLWithPath: arguments[4]))
case "J1":
    // Each enqueue awaited before the next from a running loop, as a server's code awaits them.
    let finish = Finish()
    @Sendable func enqueue(remaining: Int) {
        guard remaining > 0 else { return finish.complete() }
        store.enqueue([job]).onResult(on: loop.scheduler) { result in
            guard case .success = result else { printError("J1: \(result)\n"); exit(1) }
            enqueue(remaining: remaining - 1)
        }
    }
    let start = monotonicNanoseconds()
    loop.execute { enqueue(remaining: count) }
    try loop.run(until: finish.future)
    emit("jobs_per_second", Double(count) / seconds(since: start))
case "J1-runs":
    // The same through a run(until:) of the loop per enqueue, as a script or test awaits each.
    let start = monotonicNanoseconds()
    try enqueue(count, batch: 1)
    emit("jobs_per_second", Double(count) / seconds(since: start))
case "J1-batch":
    let start = monotonicNanoseconds()
    try enqueue(count, batch: 1000)
    emit("jobs_per_second", Double(count) / seconds(since: start))
case "enqueue":
    try enqueue(count, batch: 100)
case "J2":
    // As the plain loop's J2: the jobs enqueued first, then drained; timed over both.
    let start = monotonicNanoseconds()
    try enqueue(count, batch: 100)
    let finished = Atomic(0)
    let finish = Finish()
    let worker = startWorker(concurrency: 32) {
        if finished.wrappingAdd(1, ordering: .relaxed).newValue == count { finish.complete() }
    }
    try loop.run(until: finish.future)
    emit("jobs_per_second", Double(count) / seconds(since: start))
    try loop.run(until: worker.shutdown(gracePeriod: .seconds(1)))
case "drain":
    // One of several processes draining one queue: done when no job is left queued or running.
    let finished = Atomic(0)
    let worker = startWorker(concurrency: 32) { finished.wrappingAdd(1, ordering: .relaxed) }
    let finish = Finish()
    @Sendable func checkEmpty() {
        store.jobs(state: .available, queue: "default", limit: 1).flatMap(on: .none) { queued in
            queued.isEmpty ? store.jobs(state: .running, queue: "default", limit: 1) : Future(queued)
        }.onResult(on: .none) { result in
            if case .success(let left) = result, left.isEmpty {
                finish.complete()
            } else {
                _ = loop.execute(after: 0.02) { checkEmpty() }
            }
        }
    }
    _ = loop.execute(after: 0.02) { checkEmpty() }
    try loop.run(until: finish.future)
    try loop.run(until: worker.shutdown(gracePeriod: .seconds(1)))
    print("done \(finished.load(ordering: .relaxed))")
case "J3-worker":
    // The idle worker of J3: one slot; reports each handler's start on standard output. Its safety
    // poll is the store's default (5 s), far beyond the latencies measured: the notification wakes it.
    let worker = JobWorker(
        store: store, scheduler: loop.scheduler, configuration: .init(concurrencyByQueue: ["default": 1]))
    worker.register(noop) { _, context in
        print("started \(context.record.id.rawValue) \(monotonicNanoseconds())")
        fflush(nil)
        return Future(())
    }
    worker.start()
    print("ready")
    fflush(nil)
    try loop.run(until: Future<Void>(on: .none) { _ in NilDisposer() })
case "J3":
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    child.arguments = [url, "J3-worker", "0", "2"]
    let output = Pipe()
    child.standardOutput = output
    try child.run()
    var buffered = Data()
    /// The child's next line of output.
    func nextLine() -> String {
        while true {
            if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[buffered.startIndex..<end], as: UTF8.self)
                buffered = Data(buffered[(end + 1)...])
                return line
            }
            let more = output.fileHandleForReading.availableData
            guard !more.isEmpty else {
                printError("JobsPostgresBenchmarks: the J3 worker ended\n")
                exit(1)
            }
            buffered.append(more)
        }
    }
    guard nextLine() == "ready" else { exit(1) }
    usleep(200_000)  // the worker's first claim (it finds nothing) done: idle in its LISTEN
    var fromCommit: [Double] = []
    var fromCall: [Double] = []
    for _ in 0..<count {
        usleep(20_000)  // the worker idle again
        let called = monotonicNanoseconds()
        let enqueued = try loop.run(until: store.enqueue([job]))
        let committed = monotonicNanoseconds()
        let parts = nextLine().split(separator: " ")
        guard parts.count == 3, parts[0] == "started", Int64(parts[1]) == enqueued[0].id.rawValue,
            let started = Int64(parts[2])
        else {
            printError("JobsPostgresBenchmarks: the J3 worker did not start job \(enqueued[0].id) next\n")
            exit(1)
        }
        fromCommit.append(Double(started - committed) / 1e6)
        fromCall.append(Double(started - called) / 1e6)
    }
    child.terminate()
    child.waitUntilExit()
    emit("p50_ms", percentile(fromCommit, 0.5))
    emit("p99_ms", percentile(fromCommit, 0.99))
    emit("p50_ms_from_call", percentile(fromCall, 0.5))
    emit("p99_ms_from_call", percentile(fromCall, 0.99))
default:
    printError("unknown workload \(workload)\n")
    exit(64)
}
try loop.run(until: store.close())
