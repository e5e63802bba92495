import Dispatch
import Flow
@_exported import CMallocCounter

#if canImport(Glibc)
import Glibc
#endif

/// Nanoseconds on the monotonic clock.
public func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Times one measured section and, on counting runs, counts the allocations made inside it by every
/// thread. Started and stopped on whichever threads the workload needs; the workload's own
/// synchronisation (a semaphore, a loop's completion) orders the two.
public final class Stopwatch: @unchecked Sendable {
    public let countsAllocations: Bool
    private var startedAt: UInt64 = 0
    public private(set) var elapsedNanoseconds: UInt64 = 0
    public private(set) var allocations: UInt64 = 0

    public init(countsAllocations: Bool) {
        self.countsAllocations = countsAllocations
    }

    public func start() {
        if countsAllocations { mc_start_counting() }
        startedAt = monotonicNanoseconds()
    }

    public func stop() {
        elapsedNanoseconds = monotonicNanoseconds() - startedAt
        if countsAllocations { allocations = mc_stop_counting() }
    }

    /// For sections timed elsewhere (in C): the caller brackets the call with start/stop for the
    /// allocation count and reports the time it measured itself.
    public func override(elapsedNanoseconds: UInt64) {
        self.elapsedNanoseconds = elapsedNanoseconds
    }
}

/// Prints results as tab-separated lines the `run` script collects:
/// `RESULT <workload> <implementation> <metric> <value>`.
public struct Reporter {
    public let workload: String
    public let implementation: String

    public init(workload: String, implementation: String) {
        self.workload = workload
        self.implementation = implementation
    }

    public func record(_ metric: String, _ value: Double) {
        print("RESULT\t\(workload)\t\(implementation)\t\(metric)\t\(value)")
    }

    /// Runs `body` once on a tenth of `operations` (at least 1 000) with allocation counting, which also
    /// warms caches and allocators up, then once on `operations` for the time. Records
    /// `<metric>` in nanoseconds per operation and `allocs/op`.
    public func measure(
        _ metric: String = "ns/op", operations: Int, countingOperations: Int? = nil,
        _ body: (_ operations: Int, _ stopwatch: Stopwatch) -> Void
    ) {
        // For profiling under valgrind: FLOW_BENCH_OPERATIONS=20000 shrinks both runs.
        var operations = operations
        var countingOperations = countingOperations
        if let override = getenv("FLOW_BENCH_OPERATIONS").flatMap({ Int(String(cString: $0)) }) {
            operations = override
            countingOperations = override
        }
        let counted = countingOperations ?? max(1_000, operations / 10)
        let counting = Stopwatch(countsAllocations: true)
        body(counted, counting)
        let timing = Stopwatch(countsAllocations: false)
        body(operations, timing)
        record(metric, Double(timing.elapsedNanoseconds) / Double(operations))
        record("allocs/op", Double(counting.allocations) / Double(counted))
    }
}

/// The same pseudo-random timer delays, 0 to 999 ms, for every implementation (SplitMix64, fixed seed).
public func randomDelaysInMilliseconds(count: Int, seed: UInt64 = 0x5EED_F10E) -> [UInt64] {
    var state = seed
    return (0..<count).map { _ in
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return mixed % 1_000
    }
}

/// Shared mutable state for the workloads' callbacks, which capture nothing so that a callback costs
/// no allocation of its own (as a C function pointer would not). Touched by one thread at a time: the
/// loop's, with the measuring thread reading only after a semaphore or the loop's end.
public enum Shared {
    nonisolated(unsafe) public static var sink = 0
    nonisolated(unsafe) public static var taskCounter = 0
    nonisolated(unsafe) public static var timersFired = 0
    nonisolated(unsafe) public static var timerCount = 0
    nonisolated(unsafe) public static var lastTimerFiredAt: UInt64 = 0
}

public typealias Workload = (Reporter) -> Void

/// Runs the workload the command line names, from `workloads[workload][implementation]`:
/// `<program> <workload> <implementation>`, or `<program> list`.
public func runWorkloadFromCommandLine(_ workloads: [String: [String: Workload]]) -> Never {
    let arguments = CommandLine.arguments
    if arguments.count == 2, arguments[1] == "list" {
        for name in workloads.keys.sorted() {
            print("\(name)\t\(workloads[name]!.keys.sorted().joined(separator: " "))")
        }
        exit(0)
    }
    guard arguments.count == 3, let workload = workloads[arguments[1]]?[arguments[2]] else {
        print("usage: \(arguments[0]) <workload> <implementation> | list")
        exit(2)
    }
    workload(Reporter(workload: arguments[1], implementation: arguments[2]))
    exit(0)
}

extension Reporter {
    /// Measures `count` submissions from this thread to a fresh serial Dispatch queue, made by
    /// `submit(queue, index)`, until the last one ran; each submitted closure must add 1 to
    /// ``Shared/taskCounter``, which is checked at the end.
    public func measureSerialQueueSubmissions(
        _ metric: String, operations: Int = 1_000_000, submit: (DispatchQueue, Int) -> Void
    ) {
        measure(metric, operations: operations) { count, stopwatch in
            let queue = DispatchQueue(label: "bench")
            let semaphore = DispatchSemaphore(value: 0)
            queue.async { semaphore.signal() }
            semaphore.wait()  // the queue's thread is up
            Shared.taskCounter = 0
            stopwatch.start()
            for index in 0..<count {
                submit(queue, index)
            }
            queue.async { semaphore.signal() }
            semaphore.wait()
            stopwatch.stop()
            guard Shared.taskCounter == count else { fatalError("\(workload): lost work on the queue") }
        }
    }
}

/// Runs `body` in a job on a new loop driven by the calling thread ("on the loop": `Scheduler.current`
/// is the loop, so callbacks run at once), until the loop has nothing left to do; then closes it.
public func onNewLoop(_ body: @escaping @Sendable (EventLoop) -> Void) {
    let loop = EventLoop(name: "bench")
    loop.execute { body(loop) }
    do {
        try loop.run()
        try loop.close()
    } catch {
        fatalError("loop: \(error)")
    }
}

/// What a piece of code left on the heap: the bytes still in use after it (chunk sizes, malloc's
/// headers included) and the allocations it made.
public struct HeapGrowth: Sendable {
    public var bytes: UInt64 = 0
    public var allocations: UInt64 = 0

    public init() {}
}

/// Runs `body` and measures what it left on the heap (P8's metric).
public func measureHeapGrowth(_ body: () -> Void) -> HeapGrowth {
    let before = mc_heap_bytes_in_use()
    mc_start_counting()
    body()
    var growth = HeapGrowth()
    growth.allocations = mc_stop_counting()
    growth.bytes = mc_heap_bytes_in_use() - before
    return growth
}

extension Reporter {
    /// Records `growth` spread over `count` items, as "bytes/`item`" and "allocs/`item`".
    public func recordHeapGrowth(_ growth: HeapGrowth, per item: String, count: Int) {
        record("bytes/\(item)", Double(growth.bytes) / Double(count))
        record("allocs/\(item)", Double(growth.allocations) / Double(count))
    }
}
