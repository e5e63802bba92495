import BenchmarkSupport
import Dispatch
import NIOCore
import NIOPosix

/// SwiftNIO's side of each workload: a `MultiThreadedEventLoopGroup` with one thread, and the
/// measured code submitted to its loop.
enum NIOWorkloads {
    nonisolated(unsafe) static var pendingPromises: [EventLoopPromise<Int>] = []

    /// Runs `body` on a fresh one-thread loop and waits for it, then shuts the loop down.
    static func onLoop(_ body: @escaping @Sendable (any EventLoop) -> Void) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        do {
            try loop.submit { body(loop) }.wait()
            try group.syncShutdownGracefully()
        } catch {
            fatalError("NIO: \(error)")
        }
    }

    // MARK: P1

    static func promiseMapComplete(_ reporter: Reporter) {
        reporter.measure(operations: 1_000_000) { operations, stopwatch in
            onLoop { loop in
                stopwatch.start()
                for index in 0..<operations {
                    let promise = loop.makePromise(of: Int.self)
                    _ = promise.futureResult.map { value in
                        Shared.sink &+= value
                        return value &+ 1
                    }
                    promise.succeed(index)
                }
                stopwatch.stop()
            }
        }
    }

    // MARK: P2

    static func chainedMaps(_ reporter: Reporter) {
        reporter.measure("ns/link", operations: 1_000_000) { links, stopwatch in
            onLoop { loop in
                stopwatch.start()
                buildAndCompleteChain(links: links, on: loop)
                stopwatch.stop()
            }
        }
    }

    private static func buildAndCompleteChain(links: Int, on loop: any EventLoop) {
        let promise = loop.makePromise(of: Int.self)
        var tail = promise.futureResult
        for _ in 0..<links {
            tail = tail.map { $0 &+ 1 }
        }
        promise.succeed(0)
        nonisolated(unsafe) var result: Int?
        tail.whenSuccess { result = $0 }
        guard result == links else { fatalError("P2: chain did not complete") }
    }

    // MARK: P3

    /// NIO runs a callback on a completed future at once, so recursion grows the stack: it crashes
    /// far short of a million steps. Timed here at 10 000 steps; the `P3-nio-1M` entry tries 1M.
    static func recursiveFlatMap(_ reporter: Reporter) {
        reporter.measure("ns/step", operations: 10_000, countingOperations: 10_000) { depth, stopwatch in
            runCountdown(depth: depth, stopwatch)
        }
    }

    static func recursiveFlatMapMillionDeep(_ reporter: Reporter) {
        let stopwatch = Stopwatch(countsAllocations: false)
        runCountdown(depth: 1_000_000, stopwatch)
        reporter.record("ns/step", Double(stopwatch.elapsedNanoseconds) / 1e6)
    }

    private static func runCountdown(depth: Int, _ stopwatch: Stopwatch) {
        onLoop { loop in
            stopwatch.start()
            nonisolated(unsafe) var result: Int?
            countdown(depth, on: loop).whenSuccess { result = $0 }
            stopwatch.stop()
            guard result == 0 else { fatalError("P3: recursion did not complete") }
        }
    }

    private static func countdown(_ remaining: Int, on loop: any EventLoop) -> EventLoopFuture<Int> {
        loop.makeSucceededFuture(remaining).flatMap { value in
            value == 0 ? loop.makeSucceededFuture(0) : countdown(value - 1, on: loop)
        }
    }

    // MARK: P4

    static func joinPending(_ reporter: Reporter) {
        reporter.measure("ns/future", operations: 100_000, countingOperations: 100_000) { count, stopwatch in
            onLoop { loop in
                stopwatch.start()
                joinAndComplete(count: count, on: loop)
                stopwatch.stop()
            }
        }
    }

    private static func joinAndComplete(count: Int, on loop: any EventLoop) {
        var promises: [EventLoopPromise<Int>] = []
        promises.reserveCapacity(count)
        for _ in 0..<count {
            promises.append(loop.makePromise(of: Int.self))
        }
        let joined = EventLoopFuture.whenAllSucceed(promises.map(\.futureResult), on: loop)
        for (index, promise) in promises.enumerated() {
            promise.succeed(index)
        }
        promises = []
        nonisolated(unsafe) var joinedCount: Int?
        joined.whenSuccess { joinedCount = $0.count }
        guard joinedCount == count else { fatalError("P4: join did not complete") }
    }

    // MARK: P5

    static func postFromThread(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let loop = group.next()
            let semaphore = DispatchSemaphore(value: 0)
            loop.execute { semaphore.signal() }
            semaphore.wait()
            Shared.taskCounter = 0
            stopwatch.start()
            for _ in 0..<count {
                loop.execute { Shared.taskCounter &+= 1 }
            }
            loop.execute { semaphore.signal() }
            semaphore.wait()
            stopwatch.stop()
            guard Shared.taskCounter == count else { fatalError("P5: lost tasks") }
            try! group.syncShutdownGracefully()
        }
    }

    // MARK: P6

    static func postOnLoop(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let loop = group.next()
            let semaphore = DispatchSemaphore(value: 0)
            Shared.taskCounter = 0
            loop.execute {
                stopwatch.start()
                for _ in 0..<count {
                    loop.execute { Shared.taskCounter &+= 1 }
                }
                loop.execute {
                    stopwatch.stop()
                    semaphore.signal()
                }
            }
            semaphore.wait()
            guard Shared.taskCounter == count else { fatalError("P6: lost tasks") }
            try! group.syncShutdownGracefully()
        }
    }

    // MARK: P8

    static func pendingFutureMemory(_ reporter: Reporter) {
        let count = 100_000
        nonisolated(unsafe) var growth = HeapGrowth()
        pendingPromises = []
        pendingPromises.reserveCapacity(count)
        onLoop { loop in
            growth = measureHeapGrowth {
                for _ in 0..<count {
                    let promise = loop.makePromise(of: Int.self)
                    promise.futureResult.whenSuccess { Shared.sink &+= $0 }
                    pendingPromises.append(promise)
                }
            }
            for promise in pendingPromises { promise.succeed(1) }
            pendingPromises = []
        }
        reporter.recordHeapGrowth(growth, per: "pending future", count: count)
    }
}
