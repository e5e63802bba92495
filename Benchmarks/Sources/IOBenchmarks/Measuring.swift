import BenchmarkSupport
import Dispatch

/// A timed run and a counting run of the same workload, each given its own operation count.
struct IOMeasurement {
    var nanosecondsPerOperation: Double
    var allocationsPerOperation: Double
}

extension Reporter {
    /// Runs `body` once on `countingOperations` with allocation counting (which also warms up), then
    /// once on `operations` for the time.
    func measureIO(
        operations: Int, countingOperations: Int,
        _ body: (_ operations: Int, _ stopwatch: Stopwatch) -> Void
    ) -> IOMeasurement {
        let counting = Stopwatch(countsAllocations: true)
        body(countingOperations, counting)
        let timing = Stopwatch(countsAllocations: false)
        body(operations, timing)
        return IOMeasurement(
            nanosecondsPerOperation: Double(timing.elapsedNanoseconds) / Double(operations),
            allocationsPerOperation: Double(counting.allocations) / Double(countingOperations))
    }
}

/// Runs `body` in a task and blocks the calling thread until it finishes.
func blockingAwait(_ body: @escaping @Sendable () async throws -> Void) {
    let done = DispatchSemaphore(value: 0)
    Task {
        do {
            try await body()
        } catch {
            fatalError("\(error)")
        }
        done.signal()
    }
    done.wait()
}

/// Loop-confined state of a workload's callbacks.
final class LoopBox<Value>: @unchecked Sendable {
    // @unchecked Sendable: used only on the one loop thread that runs the workload.
    var value: Value

    init(_ value: Value) { self.value = value }
}
