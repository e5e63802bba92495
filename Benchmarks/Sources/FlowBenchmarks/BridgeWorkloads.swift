import BenchmarkSupport
import Dispatch
import Flow
import FlowNIO
import NIOCore
import NIOPosix

/// P13: FlowNIO's conversions between Flow futures and SwiftNIO futures, each way, on a completed and
/// on a pending future, against the same hop written with async/await (a task that awaits one future
/// and completes the other). Everything runs on one NIO loop thread; an operation ends when the
/// converted future's callback ran there.
enum BridgeWorkloads {
    nonisolated(unsafe) static var pendingFlowCompletions: [@Sendable (Flow.Result<Int>) -> Void] = []
    nonisolated(unsafe) static var pendingPromises: [EventLoopPromise<Int>] = []
    nonisolated(unsafe) static var expectedCallbacks = 0
    nonisolated(unsafe) static var stopwatch: Stopwatch?
    static let finished = DispatchSemaphore(value: 0)

    /// The callback every converted future ends in: counts, and stops the clock at the last one.
    static func converted(_ value: Int) {
        Shared.sink &+= value
        Shared.taskCounter += 1
        if Shared.taskCounter == expectedCallbacks {
            stopwatch!.stop()
            finished.signal()
        }
    }

    /// Runs `body` on a fresh one-thread NIO loop with the clock started, and waits for `operations`
    /// calls of ``converted(_:)``.
    static func measure(
        _ operations: Int, _ clock: Stopwatch, _ body: @escaping @Sendable (any NIOCore.EventLoop) -> Void
    ) {
        // As a program using FlowNIO does at startup: Flow code on NIO's threads then finds their loop.
        FlowNIOBridge.install()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        Shared.taskCounter = 0
        expectedCallbacks = operations
        stopwatch = clock
        loop.execute {
            clock.start()
            body(loop)
        }
        finished.wait()
        pendingFlowCompletions = []
        pendingPromises = []
        try! group.syncShutdownGracefully()
    }

    static func workload(_ body: @escaping @Sendable (Int, any NIOCore.EventLoop) -> Void) -> Workload {
        { reporter in
            reporter.measure(operations: 200_000) { operations, clock in
                measure(operations, clock) { loop in body(operations, loop) }
            }
        }
    }

    // MARK: Flow to NIO

    /// Completed Flow futures, converted one after another.
    static func flowToNIOCompleted(async: Bool) -> Workload {
        workload { operations, loop in
            for index in 0..<operations {
                let future = Flow.Future(index)
                if async {
                    let promise = loop.makePromise(of: Int.self)
                    promise.completeWithTask { try await future.get() }
                    promise.futureResult.whenSuccess(converted)
                } else {
                    future.eventLoopFuture(on: loop).whenSuccess(converted)
                }
            }
        }
    }

    /// Pending Flow futures, converted, then completed one after another.
    static func flowToNIOPending(async: Bool) -> Workload {
        workload { operations, loop in
            pendingFlowCompletions.reserveCapacity(operations)
            for _ in 0..<operations {
                let future = Flow.Future<Int> { completion in
                    pendingFlowCompletions.append(completion)
                    return NilDisposer()
                }
                if async {
                    let promise = loop.makePromise(of: Int.self)
                    promise.completeWithTask { try await future.get() }
                    promise.futureResult.whenSuccess(converted)
                } else {
                    future.eventLoopFuture(on: loop).whenSuccess(converted)
                }
            }
            for (index, complete) in pendingFlowCompletions.enumerated() { complete(.success(index)) }
        }
    }

    // MARK: NIO to Flow

    /// Completed NIO futures, converted one after another.
    static func nioToFlowCompleted(async: Bool) -> Workload {
        workload { operations, loop in
            for index in 0..<operations {
                let future = loop.makeSucceededFuture(index)
                if async {
                    Flow.Future { try await future.get() }.onValue(converted)
                } else {
                    future.flowFuture().onValue(converted)
                }
            }
        }
    }

    /// Pending NIO promises, converted, then succeeded one after another.
    static func nioToFlowPending(async: Bool) -> Workload {
        workload { operations, loop in
            pendingPromises.reserveCapacity(operations)
            for _ in 0..<operations {
                let promise = loop.makePromise(of: Int.self)
                pendingPromises.append(promise)
                if async {
                    Flow.Future { try await promise.futureResult.get() }.onValue(converted)
                } else {
                    promise.futureResult.flowFuture().onValue(converted)
                }
            }
            for (index, promise) in pendingPromises.enumerated() { promise.succeed(index) }
        }
    }
}
