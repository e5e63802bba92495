import BenchmarkSupport
import Dispatch
import Flow
import NIOCore
import NIOPosix

/// P11: the Swift Concurrency bridges. `await future.get()` on a completed and on a pending future
/// (Flow against SwiftNIO's `get()`), and an actor method call on a loop executor against the default
/// executor.
enum ConcurrencyWorkloads {
    /// Runs `body` in a task and blocks this (non-cooperative) thread until it finished.
    static func runTask(_ body: @escaping @Sendable () async -> Void) {
        let done = DispatchSemaphore(value: 0)
        Task {
            await body()
            done.signal()
        }
        done.wait()
    }

    // MARK: await on a completed future

    static func flowGetCompleted(_ reporter: Reporter) {
        reporter.measure(operations: 1_000_000) { operations, stopwatch in
            runTask {
                let future = Future(1)
                stopwatch.start()
                for _ in 0..<operations { Shared.sink &+= (try? await future.get()) ?? 0 }
                stopwatch.stop()
            }
        }
    }

    static func nioGetCompleted(_ reporter: Reporter) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let future = group.next().makeSucceededFuture(1)
        reporter.measure(operations: 1_000_000) { operations, stopwatch in
            runTask {
                stopwatch.start()
                for _ in 0..<operations { Shared.sink &+= (try? await future.get()) ?? 0 }
                stopwatch.stop()
            }
        }
    }

    // MARK: await on a pending future, completed by its loop

    static func flowGetPending(_ reporter: Reporter) {
        let loop = Flow.EventLoop.startOnNewThread(name: "bench")
        defer { loop.shutdown() }
        reporter.measure(operations: 200_000) { operations, stopwatch in
            runTask {
                stopwatch.start()
                for index in 0..<operations {
                    let future = Future<Int>(on: loop.scheduler) { completion in
                        loop.execute { completion(.success(index)) }
                        return NilDisposer()
                    }
                    Shared.sink &+= (try? await future.get()) ?? 0
                }
                stopwatch.stop()
            }
        }
    }

    static func nioGetPending(_ reporter: Reporter) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        reporter.measure(operations: 200_000) { operations, stopwatch in
            runTask {
                stopwatch.start()
                for index in 0..<operations {
                    let promise = loop.makePromise(of: Int.self)
                    loop.execute { promise.succeed(index) }
                    Shared.sink &+= (try? await promise.futureResult.get()) ?? 0
                }
                stopwatch.stop()
            }
        }
    }

    // MARK: actor calls

    actor LoopCounter {
        nonisolated let loop: Flow.EventLoop
        nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
        var count = 0
        init(loop: Flow.EventLoop) { self.loop = loop }
        func increment() { count &+= 1 }
    }

    actor DefaultCounter {
        var count = 0
        func increment() { count &+= 1 }
    }

    /// An actor pinned to a loop, called from a task that prefers that loop: no hop at all.
    static func actorOnLoopFromLoop(_ reporter: Reporter) {
        let loop = Flow.EventLoop.startOnNewThread(name: "bench")
        defer { loop.shutdown() }
        let counter = LoopCounter(loop: loop)
        reporter.measure(operations: 1_000_000) { operations, stopwatch in
            let done = DispatchSemaphore(value: 0)
            Task(executorPreference: loop) {
                stopwatch.start()
                for _ in 0..<operations { await counter.increment() }
                stopwatch.stop()
                done.signal()
            }
            done.wait()
        }
    }

    /// An actor pinned to a loop, called from a task on the default executor: two hops a call.
    static func actorOnLoopFromPool(_ reporter: Reporter) {
        let loop = Flow.EventLoop.startOnNewThread(name: "bench")
        defer { loop.shutdown() }
        let counter = LoopCounter(loop: loop)
        reporter.measure(operations: 200_000) { operations, stopwatch in
            runTask {
                stopwatch.start()
                for _ in 0..<operations { await counter.increment() }
                stopwatch.stop()
            }
        }
    }

    /// An actor on the default executor, called from a task on the default executor.
    static func actorOnPool(_ reporter: Reporter) {
        let counter = DefaultCounter()
        reporter.measure(operations: 1_000_000) { operations, stopwatch in
            runTask {
                stopwatch.start()
                for _ in 0..<operations { await counter.increment() }
                stopwatch.stop()
            }
        }
    }
}
