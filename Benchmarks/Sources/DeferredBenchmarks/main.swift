import BenchmarkSupport
import Deferred
import Dispatch
import Flow

// P9: `upon` on a filled `Deferred`, to a serial Dispatch queue (against bare `DispatchQueue.async`)
// and to an event loop (on the loop's own thread).
//
//   DeferredBenchmarks P9-queue deferred|dispatch
//   DeferredBenchmarks P9-loop deferred|flow

/// 1M closures submitted from this thread to a serial queue; time until the last one ran.
func queueWorkload(submit: @escaping (DispatchQueue, Int) -> Void) -> Workload {
    { reporter in
        reporter.measure("ns/op", operations: 1_000_000) { count, stopwatch in
            let queue = DispatchQueue(label: "bench")
            let semaphore = DispatchSemaphore(value: 0)
            queue.async { semaphore.signal() }
            semaphore.wait()
            Shared.taskCounter = 0
            stopwatch.start()
            for index in 0..<count {
                submit(queue, index)
            }
            queue.async { semaphore.signal() }
            semaphore.wait()
            stopwatch.stop()
            guard Shared.taskCounter == count else { fatalError("P9: lost work") }
        }
    }
}

/// 1M closures submitted to a loop from a job on that loop; time until the last one ran.
func loopWorkload(submit: @escaping @Sendable (Flow.EventLoop) -> Void) -> Workload {
    { reporter in
        reporter.measure("ns/op", operations: 1_000_000) { count, stopwatch in
            Shared.taskCounter = 0
            let loop = Flow.EventLoop(name: "bench")
            loop.execute {
                stopwatch.start()
                for _ in 0..<count {
                    submit(loop)
                }
                loop.execute { stopwatch.stop() }
            }
            do {
                try loop.run()
                try loop.close()
            } catch {
                fatalError("loop: \(error)")
            }
            guard Shared.taskCounter == count else { fatalError("P9: lost work") }
        }
    }
}

let filled = Deferred<Int>(filledWith: 1)

runWorkloadFromCommandLine([
    "P9-queue": [
        "deferred": queueWorkload { queue, _ in filled.upon(queue) { Shared.taskCounter &+= $0 } },
        "dispatch": queueWorkload { queue, _ in queue.async { Shared.taskCounter &+= 1 } },
    ],
    // The case: `upon` to the loop's scheduler, from the loop (runs at once, as the scheduler
    // promises), against a bare `loop.execute`.
    "P9-loop": [
        "deferred": loopWorkload { loop in filled.upon(loop.scheduler) { Shared.taskCounter &+= $0 } },
        "flow": loopWorkload { loop in loop.execute { Shared.taskCounter &+= 1 } },
    ],
])
