import BenchmarkSupport
import Dispatch
import Flow
import FlowNIO
import NIOCore
import NIOPosix

/// P13-nio: SwiftNIO code run on a Flow loop through `FlowNIOEventLoop`, against the same code on
/// NIO's own `MultiThreadedEventLoopGroup` with one thread. Both implementations run the same
/// functions on an `any EventLoop`, as NIO code holds its loop; only the loop differs.
enum NIOAdapterWorkloads {
    /// Runs `body` with a one-thread loop (`flow`: a Flow loop on a thread of its own, seen through
    /// `nioEventLoop`; otherwise NIO's own), then stops it.
    static func withLoop(flow: Bool, _ body: (any NIOCore.EventLoop) -> Void) {
        if flow {
            let flowLoop = Flow.EventLoop.startOnNewThread(name: "bench")
            body(flowLoop.nioEventLoop)
            flowLoop.shutdown()
        } else {
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            body(group.next())
            try! group.syncShutdownGracefully()
        }
    }

    // MARK: P13-nio-submit

    /// `submit {}` from another thread, waiting for each future before the next: a round trip to
    /// the loop and back, 100,000 times.
    static func submitRoundTrips(flow: Bool) -> Workload {
        { reporter in
            reporter.measure(operations: 100_000) { operations, stopwatch in
                withLoop(flow: flow) { loop in
                    try! loop.submit {}.wait()  // the loop's thread is up
                    stopwatch.start()
                    for _ in 0..<operations {
                        try! loop.submit { Shared.taskCounter &+= 1 }.wait()
                    }
                    stopwatch.stop()
                }
            }
        }
    }

    // MARK: P13-nio-future-map

    /// `makeSucceededFuture(i).map { $0 + 1 }` on the loop, 1M times.
    static func succeededFutureMap(flow: Bool) -> Workload {
        { reporter in
            reporter.measure(operations: 1_000_000) { operations, stopwatch in
                withLoop(flow: flow) { loop in
                    try! loop.submit {
                        stopwatch.start()
                        for index in 0..<operations {
                            _ = loop.makeSucceededFuture(index).map { value in
                                Shared.sink &+= value
                                return value &+ 1
                            }
                        }
                        stopwatch.stop()
                    }.wait()
                }
            }
        }
    }
}
