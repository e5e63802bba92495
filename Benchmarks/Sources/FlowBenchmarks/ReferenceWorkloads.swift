import CLibUVReference
import BenchmarkSupport
import Dispatch

/// The references that are not a futures library: raw libuv (in C, see `CLibUVReference`) and a
/// serial Dispatch queue.
enum ReferenceWorkloads {
    // MARK: P5

    static func libuvPostFromThread(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            stopwatch.start()
            let elapsed = uvref_post_from_thread(Int32(count))
            stopwatch.stop()
            stopwatch.override(elapsedNanoseconds: elapsed)
        }
    }

    static func dispatchPostFromThread(_ reporter: Reporter) {
        reporter.measureSerialQueueSubmissions("ns/task") { queue, _ in
            queue.async { Shared.taskCounter &+= 1 }
        }
    }

    // MARK: P6

    static func libuvPostOnLoop(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            stopwatch.start()
            let elapsed = uvref_post_on_loop(Int32(count))
            stopwatch.stop()
            stopwatch.override(elapsedNanoseconds: elapsed)
        }
    }

    // MARK: P7

    static func libuvTimers(_ reporter: Reporter) {
        let count = 1_000_000
        let delays = randomDelaysInMilliseconds(count: count)

        // Allocations on a tenth of the timers: starting them, and cancelling them.
        let counted = count / 10
        var allocations: [UInt64] = [0, 0]
        _ = uvref_timers_cancel_all(Int32(counted), delays, &allocations)

        let fired = uvref_timers_fire_all(Int32(count), delays)
        let cancelNanoseconds = uvref_timers_cancel_all(Int32(count), delays, nil)

        reporter.record("schedule ns/timer", Double(fired.scheduleNanoseconds) / Double(count))
        reporter.record("until last fired s", Double(fired.untilLastFiredNanoseconds) / 1e9)
        reporter.record("cancel ns/timer", Double(cancelNanoseconds) / Double(count))
        reporter.record("schedule allocs/timer", Double(allocations[0]) / Double(counted))
        reporter.record("cancel allocs/timer", Double(allocations[1]) / Double(counted))
    }

    // MARK: P8

    static func libuvPendingTimerMemory(_ reporter: Reporter) {
        let count = 100_000
        mc_start_counting()
        let bytes = uvref_bytes_per_pending_timer(Int32(count))
        let allocations = mc_stop_counting()
        reporter.record("bytes/pending timer", bytes)
        reporter.record("allocs/pending timer", Double(allocations) / Double(count))
    }
}
