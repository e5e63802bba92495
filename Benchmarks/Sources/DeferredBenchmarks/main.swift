import BenchmarkSupport
import Deferred
import Dispatch
import Flow

// P9: `upon` on a filled `Deferred`, to a serial Dispatch queue (against bare `DispatchQueue.async`)
// and to an event loop (on the loop's own thread).
//
//   DeferredBenchmarks P9-queue deferred|dispatch|dispatch-capturing
//   DeferredBenchmarks P9-queue-pending deferred|dispatch-capturing
//   DeferredBenchmarks P9-loop deferred|flow
//
// And P8's memory per pending future with one callback, for a `Deferred`:
//
//   DeferredBenchmarks P8-deferred deferred

/// 1M closures submitted from this thread to a serial queue; time until the last one ran.
func queueWorkload(submit: @escaping (DispatchQueue, Int) -> Void) -> Workload {
    { reporter in reporter.measureSerialQueueSubmissions("ns/op", submit: submit) }
}

/// 1M closures submitted to a loop from a job on that loop; time until the last one ran.
func loopWorkload(submit: @escaping @Sendable (Flow.EventLoop) -> Void) -> Workload {
    { reporter in
        reporter.measure("ns/op", operations: 1_000_000) { count, stopwatch in
            Shared.taskCounter = 0
            onNewLoop { loop in
                stopwatch.start()
                for _ in 0..<count {
                    submit(loop)
                }
                loop.execute { stopwatch.stop() }
            }
            guard Shared.taskCounter == count else { fatalError("P9: lost work") }
        }
    }
}

let filled = Deferred<Int>(filledWith: 1)

/// The last Deferred of `P9-queue-pending`, kept until the next replaces it: a Deferred that escapes,
/// as in real code, is allocated on the heap (one that does not, the optimiser puts on the stack).
nonisolated(unsafe) var lastPending: Deferred<Int>?

/// P8 for a `Deferred`: the heap bytes and allocations of 100k pending Deferreds, each with one
/// `upon` closure to the loop they were made on, kept in an array reserved beforehand.
func pendingDeferredMemory(_ reporter: Reporter) {
    let count = 100_000
    nonisolated(unsafe) var growth = HeapGrowth()
    nonisolated(unsafe) var pending: [Deferred<Int>] = []
    pending.reserveCapacity(count)
    onNewLoop { loop in
        let scheduler = loop.scheduler
        growth = measureHeapGrowth {
            for _ in 0..<count {
                let deferred = Deferred<Int>()
                deferred.upon(scheduler) { Shared.taskCounter &+= $0 }
                pending.append(deferred)
            }
        }
        Shared.taskCounter = 0
        for deferred in pending { deferred.fill(with: 1) }
        pending = []
    }
    guard Shared.taskCounter == count else { fatalError("P8-deferred: lost callbacks") }
    reporter.recordHeapGrowth(growth, per: "pending future", count: count)
}

runWorkloadFromCommandLine([
    "P8-deferred": ["deferred": pendingDeferredMemory],
    "P9-queue": [
        "deferred": queueWorkload { queue, _ in filled.upon(queue) { Shared.taskCounter &+= $0 } },
        // Expected allocations per operation: 2 (the block Dispatch copies to the heap, and its
        // continuation, taken from the heap because the queue's thread frees them into its own cache).
        "dispatch": queueWorkload { queue, _ in queue.async { Shared.taskCounter &+= 1 } },
        // What a caller holding the value and the handler writes without Deferred, and what `upon`
        // does once filled: 3 allocations, the closure's context (the handler and the value) coming
        // on top of the 2 above. `deferred` is expected at 3 too.
        "dispatch-capturing": { () -> Workload in
            let value = filled.peek()!
            let body: @Sendable (Int) -> Void = { Shared.taskCounter &+= $0 }
            return queueWorkload { queue, _ in queue.async { body(value) } }
        }(),
    ],
    // A new Deferred each time, `upon` while it is pending, then the fill, which submits the closure:
    // 5 allocations expected, the Deferred and its locked state, and the 3 of `dispatch-capturing`.
    "P9-queue-pending": [
        "deferred": queueWorkload { queue, index in
            let deferred = Deferred<Int>()
            deferred.upon(queue) { value in
                Shared.sink &+= value
                Shared.taskCounter &+= 1
            }
            deferred.fill(with: index)
            lastPending = deferred
        },
        "dispatch-capturing": { () -> Workload in
            let body: @Sendable (Int) -> Void = { value in
                Shared.sink &+= value
                Shared.taskCounter &+= 1
            }
            return queueWorkload { queue, index in queue.async { body(index) } }
        }(),
    ],
    // The case: `upon` to the loop's scheduler, from the loop (runs at once, as the scheduler
    // promises), against a bare `loop.execute`.
    "P9-loop": [
        "deferred": loopWorkload { loop in filled.upon(loop.scheduler) { Shared.taskCounter &+= $0 } },
        "flow": loopWorkload { loop in loop.execute { Shared.taskCounter &+= 1 } },
    ],
])
