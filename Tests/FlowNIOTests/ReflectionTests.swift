import Flow
import FlowNIO
import NIOCore
import NIOPosix
import Testing

/// Reflection of what holds a Flow loop reached the loop's lock-guarded queue and stopped the process.
@Suite("FlowNIO: printing the adapters")
struct FlowNIOReflectionTests {
    @Test("a Flow loop seen as a NIO loop, and a scheduler on a NIO loop, print every way")
    func adaptersPrint() async throws {
        let loop = Flow.EventLoop.startOnNewThread(name: "test.printed.nio")
        defer { loop.shutdown() }
        try await withLoopGroup { group in
            let nioLoop = group.next()
            expectPrintedEveryWay([
                (loop.nioEventLoop, "test.printed.nio"),
                (Scheduler(eventLoop: nioLoop), "Scheduler"),
                (nioLoop.makeSucceededFuture(1).flowFuture(), "Future<Int>"),
            ])
        }
    }
}
