import CAllocationCounting
import Flow
import FlowNIO
import FlowTestSupport
import NIOCore
import Testing

/// Allocations per operation of SwiftNIO code on a Flow loop through `FlowNIOEventLoop`, with exact
/// thresholds: Benchmarks' P13-nio workloads. What the counts hold is NIO's own objects (its futures,
/// its promises' callbacks, `wait()`'s lock); the adapter must add none, on the loop's thread or
/// another.
@Suite("Allocations per operation of NIO code on a Flow loop", .serialized,
    .enabled(if: ac_available() != 0, "the sanitizers replace malloc"))
struct NIOAdapterAllocationTests {
    @Test("P13-nio-future-map: makeSucceededFuture(i).map { $0 + 1 } on the loop")
    func succeededFutureMap() throws {
        let counted = Shared((allocations: 0, bytes: 0))
        try withLoopOnOwnThread(name: "test.allocations") { flowLoop in
            let loop: any NIOCore.EventLoop = flowLoop.nioEventLoop
            try loop.submit {
                func operation(_ index: Int) {
                    // The callback captures nothing, as in the benchmark: the allocations are NIO's.
                    _ = loop.makeSucceededFuture(index).map { $0 &+ 1 }
                }
                for index in 0..<AllocationTests.operations { operation(index) }
                counted.value = AllocationTests.countPerOperation {
                    for index in 0..<AllocationTests.operations { operation(index) }
                }
            }.wait()
        }
        #expect(counted.value.allocations == Thresholds.nioSucceededFutureMap)
    }

    /// Round trips of the submit test, counted on the loop's thread by a task that captures nothing
    /// (as the benchmark's: a capturing task would add its own context to the count).
    nonisolated(unsafe) static var roundTripsRun = 0

    @Test("P13-nio-submit: submit {} from another thread and wait(), counted on both threads")
    func submitRoundTrip() throws {
        try withLoopOnOwnThread(name: "test.allocations") { flowLoop in
            let loop: any NIOCore.EventLoop = flowLoop.nioEventLoop
            let roundTrips = {
                for _ in 0..<AllocationTests.operations { try loop.submit { Self.roundTripsRun += 1 }.wait() }
            }
            Self.roundTripsRun = 0
            try roundTrips()
            // The loop's thread counts from a job until a later job, after the measured round trips.
            try loop.submit { ac_start_counting() }.wait()
            var thrown: (any Error)?
            let submitting = AllocationTests.countPerOperation {
                do { try roundTrips() } catch { thrown = error }
            }
            let loopThreadAllocations = try loop.submit { Int(ac_stop_counting()) }.wait()
            if let thrown { throw thrown }
            let running = (loopThreadAllocations + AllocationTests.operations / 2) / AllocationTests.operations
            #expect(Self.roundTripsRun == 2 * AllocationTests.operations)
            // Both threads together: where NIO allocates (the caller or the loop) is NIO's business.
            #expect(
                submitting.allocations + running == Thresholds.nioSubmitRoundTrip,
                "\(submitting.allocations) on the submitting thread, \(running) on the loop's")
        }
    }
}

extension Thresholds {
    // NIO's objects per operation. The future map: the succeeded future, the mapped one, and the
    // callback that completes it. The submit round trip: the promise's future and the closure that runs
    // the task (`submit`), `wait()`'s lock, box and callback, and the job that registers the callback
    // from the waiting thread; unoptimised code adds closure contexts on the loop's thread.
    #if DEBUG
    static let nioSucceededFutureMap = 3
    static let nioSubmitRoundTrip = 12
    #else
    static let nioSucceededFutureMap = 3
    static let nioSubmitRoundTrip = 8
    #endif
}
