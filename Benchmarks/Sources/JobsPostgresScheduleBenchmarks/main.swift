// J6-pg (issue #41): J6 on PostgreSQL. A schedule firing every second on an idle worker of a
// PostgresJobStore: from each tick's instant (kept in its job's unique key) to its handler's start, for
// `count` ticks. Benchmarks/jobs-postgres runs it on its throwaway cluster, a fresh database each run.
//
//     JobsPostgresScheduleBenchmarks J6-pg <count> <postgresql URL>
//
// Prints `<metric> <value>` lines.

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

func emit(_ metric: String, _ value: Double) {
    print("\(metric) \(String(format: "%.4f", value))")
    fflush(nil)
}

/// A future completed by `complete()` from any thread: the end of a run.
final class Finish: Sendable {
    let future: Future<Void>

    init() {
        let slot = Slot()
        future = Future<Void>(on: .none) { completion in
            slot.completion.withLock { $0 = completion }
            return NilDisposer()
        }
        self.slot = slot
    }

    private final class Slot: Sendable {
        let completion = Mutex<(@Sendable (Result<Void>) -> Void)?>(nil)
    }

    private let slot: Slot

    func complete() { slot.completion.withLock { $0 }?(.success(())) }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

let arguments = CommandLine.arguments
guard arguments.count == 4, arguments[1] == "J6-pg", let count = Int(arguments[2]), count >= 1 else {
    FileHandle.standardError.write(Data("usage: JobsPostgresScheduleBenchmarks J6-pg <count> <postgresql URL>\n".utf8))
    exit(64)
}
let loop = EventLoop.main
let store = try loop.run(until: PostgresJobStore.open(url: arguments[3], on: loop))
let latencies = Mutex<[Double]>([])
let finished = Finish()
let worker = JobWorker(store: store, scheduler: loop.scheduler, configuration: .init(concurrencyByQueue: ["default": 4]))
let prefix = ScheduleFiring.uniqueKeyPrefix(schedule: "j6")
worker.register(noop) { _, context in
    let started = Date().timeIntervalSince1970 * 1000
    if let key = context.record.uniqueKey, let tick = Double(key.dropFirst(prefix.count)) {
        let samples = latencies.withLock { latencies in
            latencies.append(started - tick)
            return latencies.count
        }
        if samples == count { finished.complete() }
    }
    return Future(())
}
try worker.schedule("j6", try JobSchedule.every(.seconds(1)), job: noop, payload: Noop(n: 0), catchUp: .none)
worker.start()
try loop.run(until: finished.future)
try loop.run(until: worker.shutdown(gracePeriod: .seconds(1)))
let values = latencies.withLock { $0 }
emit("tick_to_handler_p50_ms", percentile(values, 0.5))
emit("tick_to_handler_p99_ms", percentile(values, 0.99))
emit("tick_to_handler_max_ms", values.max() ?? 0)
try loop.run(until: store.close())
