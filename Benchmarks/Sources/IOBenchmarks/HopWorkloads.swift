import BenchmarkSupport
import Dispatch
import Flow
import FlowNet

/// P18-hop: what an I/O call costs from another thread (the hop to the loop and back) next to the
/// same call on the loop. The call is `UDPSocket.setBroadcast(true)`, one `setsockopt`, so that the
/// figure is the hop's: 200,000 calls in a row, from the loop's own work (`flow`), from a plain
/// thread through the synchronous form, which waits for the loop each time (`flow-thread`), and from a
/// task through `EventLoop.perform`, which suspends instead (`flow-async`). The loop runs on a thread of
/// its own (`EventLoop.startOnNewThread`) and does nothing else.
enum HopWorkloads {
    static let operations = 200_000

    static func onLoop(_ reporter: Reporter) {
        measure(reporter) { loop, socket, count in
            loop.performAndWait {
                for _ in 0..<count { try! socket.setBroadcast(true) }
            }
        }
    }

    static func fromThread(_ reporter: Reporter) {
        measure(reporter) { _, socket, count in
            for _ in 0..<count { try! socket.setBroadcast(true) }
        }
    }

    static func fromTask(_ reporter: Reporter) {
        measure(reporter) { loop, socket, count in
            blockingAwait {
                for _ in 0..<count {
                    try await loop.perform { () throws(EventLoopError) in try socket.setBroadcast(true) }
                }
            }
        }
    }

    private static func measure(_ reporter: Reporter, _ calls: @escaping (EventLoop, UDPSocket, Int) -> Void) {
        let loop = EventLoop.startOnNewThread(name: "bench.hop")
        let socket = try! UDPSocket.bind(on: loop)
        reporter.measure("ns/call", operations: operations) { count, stopwatch in
            stopwatch.start()
            calls(loop, socket, count)
            stopwatch.stop()
        }
        _ = loop.performAndWait { socket.close() }
        loop.shutdown()
    }
}
