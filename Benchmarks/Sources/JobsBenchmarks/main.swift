// J1-J5 (issue #37), J6 (issue #41): FlowJobs' SQLite store and worker against the same SQL in a plain C loop
// (CSQLiteJobsReference). Benchmarks/jobs runs each in a process of its own, with huey beside them.
//
//     JobsBenchmarks <workload> <implementation> <count> <directory>
//
// Prints `<metric> <value>` lines.

import CSQLiteJobsReference
import Flow
import FlowJobs
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

struct Noop: Codable, Sendable {
    var n: Int
}

let noop = JobKind<Noop>(name: "noop")
let spin = JobKind<Noop>(name: "spin", queue: "load")

/// Writes `text` to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

func emit(_ metric: String, _ value: Double) {
    print("\(metric) \(String(format: "%.4f", value))")
    fflush(nil)
}

func seconds(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9 }

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

/// Resident memory, from /proc/self/statm, in MiB.
func residentMiB() -> Double {
    let text = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = text.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
    return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

/// A value behind a lock, in a class so that escaping closures can share it.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Synchronization.Mutex<Value>

    init(_ value: Value) { mutex = Synchronization.Mutex(value) }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result { mutex.withLock { body(&$0) } }

    var value: Value {
        get { withLock { $0 } }
        set { withLock { $0 = newValue } }
    }
}

/// A future completed by `complete()` from any thread: the end of a run.
final class Finish: Sendable {
    private final class Slot: Sendable {
        let completion = Synchronization.Mutex<(@Sendable (Result<Void>) -> Void)?>(nil)
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
guard arguments.count == 5, let count = Int(arguments[3]) else {
    printError("usage: JobsBenchmarks <J1|J1-batch|J1-group|J2|J3|J4-idle|J4-loaded|J5|J6> <flow|plain> <count> <directory>\n")
    exit(64)
}
let workload = arguments[1], implementation = arguments[2], directory = arguments[4]
let path = directory + "/jobs-\(workload)-\(implementation).sqlite"
let job = try noop.newJob(Noop(n: 1), clock: .system)

if implementation == "plain" {
    guard reference_jobs_open(path) == 0 else { exit(1) }
    let nanoseconds: Int64
    switch workload {
    case "J1": nanoseconds = reference_jobs_enqueue_each(Int32(count))
    case "J1-batch": nanoseconds = reference_jobs_enqueue_batched(Int32(count), 1000)
    case "J2": nanoseconds = reference_jobs_end_to_end(Int32(count), 100, 32)
    default:
        printError("no plain loop for \(workload)\n")
        exit(64)
    }
    reference_jobs_close()
    guard nanoseconds > 0 else { exit(1) }
    emit("jobs_per_second", Double(count) / (Double(nanoseconds) / 1e9))
    exit(0)
}

let store = try SQLiteJobStore(path: path)
let loop = EventLoop.main

/// A started worker of `store` on the main loop, calling `onFinished` with each finished job.
func startWorker(
    concurrency: [String: Int] = ["default": 32], onFinished: @escaping @Sendable (JobRecord) -> Void,
    register: (JobWorker) -> Void
) -> JobWorker {
    let worker = JobWorker(
        store: store, scheduler: loop.scheduler,
        configuration: .init(
            concurrencyByQueue: concurrency,
            onEvent: { event in if case .attemptFinished(let record) = event { onFinished(record) } }))
    register(worker)
    worker.start()
    return worker
}

/// Drift of delayed jobs (J4): `count` jobs due over 4 s from 0.2 s on; with `loaded`, the loop also
/// runs jobs that each spin for 5 ms, one enqueued every 5 ms at most (about 80 % of the loop's time
/// here; the run prints the fraction it got).
func measureDrift(loaded: Bool) throws {
    let finish = Finish()
    let drifts = Locked<[Double]>([])
    let spinNanoseconds = Locked(0)
    let worker = startWorker(
        concurrency: ["default": 32, "load": 1],
        onFinished: { record in
            if record.name == noop.name, drifts.withLock({ $0.count }) == count { finish.complete() }
        },
        register: { worker in
            worker.register(noop) { _, context in
                let drift = Date().timeIntervalSince(context.record.runAt) * 1000
                drifts.withLock { $0.append(drift) }
                return Future(())
            }
            worker.register(spin) { _, _ in
                let start = DispatchTime.now().uptimeNanoseconds
                while DispatchTime.now().uptimeNanoseconds - start < 5_000_000 {}
                spinNanoseconds.withLock { $0 += Int(DispatchTime.now().uptimeNanoseconds - start) }
                return Future(())
            }
        })
    let spinJob = try spin.newJob(Noop(n: 0), clock: .system)
    let isDone = Locked(false)
    @Sendable func addLoad() {
        guard !isDone.value else { return }
        _ = store.enqueue([spinJob])
        _ = loop.execute(after: 0.005) { addLoad() }
    }
    let start = DispatchTime.now().uptimeNanoseconds
    if loaded { _ = loop.execute(after: 0) { addLoad() } }
    let now = Date()
    let jobs = try (0..<count).map { index in
        try noop.newJob(Noop(n: index), options: EnqueueOptions(at: now.addingTimeInterval(0.2 + 4 * Double(index) / Double(count))), clock: .system)
    }
    _ = store.enqueue(jobs)
    try loop.run(until: finish.future)
    isDone.value = true
    let elapsed = seconds(since: start)
    try loop.run(until: worker.shutdown(gracePeriod: .seconds(1)))
    let values = drifts.withLock { $0 }
    emit("drift_p50_ms", percentile(values, 0.5))
    emit("drift_p99_ms", percentile(values, 0.99))
    emit("drift_max_ms", values.max() ?? 0)
    if loaded { emit("loop_busy_fraction", Double(spinNanoseconds.value) / 1e9 / elapsed) }
}

switch workload {
case "J1":
    // One enqueue per transaction: each waits for its commit before the next starts, from a running
    // loop, as a server's code awaits them.
    let finish = Finish()
    @Sendable func enqueue(remaining: Int) {
        guard remaining > 0 else { return finish.complete() }
        store.enqueue([job]).onResult(on: loop.scheduler) { result in
            guard case .success = result else { printError("J1: \(result)\n"); exit(1) }
            enqueue(remaining: remaining - 1)
        }
    }
    let start = DispatchTime.now().uptimeNanoseconds
    loop.execute { enqueue(remaining: count) }
    try loop.run(until: finish.future)
    emit("jobs_per_second", Double(count) / seconds(since: start))
case "J1-runs":
    // The same, with a `run(until:)` of the loop per enqueue, as a script or test awaits each: the
    // loop's setup and teardown of each run on top.
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<count { _ = try loop.run(until: store.enqueue([job])) }
    emit("jobs_per_second", Double(count) / seconds(since: start))
case "J1-batch":
    let batch = Array(repeating: job, count: 1000)
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<(count / 1000) { _ = try loop.run(until: store.enqueue(batch)) }
    emit("jobs_per_second", Double(count / 1000 * 1000) / seconds(since: start))
case "J1-group":
    // Separate enqueues issued at once, as many callers would: the writer commits them in groups.
    let start = DispatchTime.now().uptimeNanoseconds
    let futures = (0..<count).map { _ in store.enqueue([job]) }
    for future in futures { _ = try loop.run(until: future) }
    emit("jobs_per_second", Double(count) / seconds(since: start))
case "J2", "J5":
    // Enqueued in batches of 100 while a worker (32 at a time) claims, runs a no-op and completes.
    // J5 does it in rounds of 10,000 and samples resident memory every 100,000 jobs.
    let round = workload == "J5" ? 10_000 : count
    let completed = Locked(0)
    let finish = Locked(Finish())
    let worker = startWorker(
        onFinished: { _ in
            if completed.withLock({ $0 += 1; return $0 }) % round == 0 { finish.withLock { $0 }.complete() }
        },
        register: { worker in worker.register(noop) { _, _ in Future(()) } })
    let batch = Array(repeating: job, count: 100)
    let start = DispatchTime.now().uptimeNanoseconds
    var firstResident = 0.0
    let sampleEvery = max(round, count / 10 / round * round)
    for done in stride(from: 0, to: count, by: round) {
        let roundFinish = finish.withLock { $0 }
        for _ in 0..<(round / 100) { _ = store.enqueue(batch) }
        try loop.run(until: roundFinish.future)
        finish.withLock { $0 = Finish() }
        let jobs = done + round
        // Ten samples over the run; the first after one round, once the store's caches are warm.
        if workload == "J5" && (jobs == round || jobs % sampleEvery == 0 || jobs >= count) {
            let resident = residentMiB()
            if jobs == round { firstResident = resident }
            emit("resident_mib_after_\(jobs)", resident)
            if jobs >= count { emit("resident_growth_mib", resident - firstResident) }
        }
    }
    emit("jobs_per_second", Double(count) / seconds(since: start))
    try loop.run(until: worker.shutdown(gracePeriod: .seconds(1)))
case "J3":
    // Idle worker; one job at a time: from the enqueue's commit to its handler's start.
    let started = Locked<UInt64>(0)
    let finish = Locked(Finish())
    let worker = startWorker(
        concurrency: ["default": 1], onFinished: { _ in finish.withLock { $0 }.complete() },
        register: { worker in
            worker.register(noop) { _, _ in
                started.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
                return Future(())
            }
        })
    var fromCommit: [Double] = []
    var fromCall: [Double] = []
    for _ in 0..<count {
        let roundFinish = finish.withLock { $0 }
        let committed = Locked<UInt64>(0)
        let called = DispatchTime.now().uptimeNanoseconds
        _ = store.enqueue([job]).onValue(on: .none) { _ in committed.withLock { $0 = DispatchTime.now().uptimeNanoseconds } }
        try loop.run(until: roundFinish.future)
        finish.withLock { $0 = Finish() }
        let handlerStart = started.withLock { $0 }
        fromCommit.append(Double(Int64(handlerStart) - Int64(committed.withLock { $0 })) / 1e6)
        fromCall.append(Double(handlerStart - called) / 1e6)
        usleep(1000)
    }
    emit("commit_to_handler_p50_ms", percentile(fromCommit, 0.5))
    emit("commit_to_handler_p99_ms", percentile(fromCommit, 0.99))
    emit("enqueue_call_to_handler_p50_ms", percentile(fromCall, 0.5))
    emit("enqueue_call_to_handler_p99_ms", percentile(fromCall, 0.99))
    try loop.run(until: worker.shutdown(gracePeriod: .seconds(1)))
case "J6":
    // A schedule firing every second on an idle worker: from each tick's instant (kept in its job's unique
    // key) to its handler's start, for `count` ticks.
    let latencies = Locked<[Double]>([])
    let finish = Finish()
    let worker = JobWorker(
        store: store, scheduler: loop.scheduler, configuration: .init(concurrencyByQueue: ["default": 4]))
    let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: "j6")
    worker.register(noop) { _, context in
        let started = Date().timeIntervalSince1970 * 1000
        if let key = context.record.uniqueKey, let tick = Double(key.dropFirst(prefix.count)) {
            let samples = latencies.withLock { latencies in
                latencies.append(started - tick)
                return latencies.count
            }
            if samples == count { finish.complete() }
        }
        return Future(())
    }
    try worker.schedule("j6", try JobSchedule.every(.seconds(1)), job: noop, payload: Noop(n: 0), catchUp: .none)
    worker.start()
    try loop.run(until: finish.future)
    try loop.run(until: worker.shutdown(gracePeriod: .seconds(1)))
    let values = latencies.withLock { $0 }
    emit("tick_to_handler_p50_ms", percentile(values, 0.5))
    emit("tick_to_handler_p99_ms", percentile(values, 0.99))
    emit("tick_to_handler_max_ms", values.max() ?? 0)
case "J4-idle":
    try measureDrift(loaded: false)
case "J4-loaded":
    try measureDrift(loaded: true)
default:
    printError("unknown workload \(workload)\n")
    exit(64)
}
try loop.run(until: store.close())
