import Dispatch
import Flow
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import NIOPosix

/// An error a test fails a future with, to check that the same error comes out the other side.
struct TestFailure: Error, Equatable {
    let code: Int
}

/// Runs `body` with a new `MultiThreadedEventLoopGroup` of two loops, then shuts the group down.
func withLoopGroup<T>(_ body: (MultiThreadedEventLoopGroup) async throws -> T) async throws -> T {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    do {
        let result = try await body(group)
        try await group.shutdownGracefully()
        return result
    } catch {
        try? await group.shutdownGracefully()
        throw error
    }
}

/// Runs `body` with a Flow loop on its own thread, then shuts it down.
func withFlowLoop<T>(_ body: (Flow.EventLoop) async throws -> T) async throws -> T {
    let loop = Flow.EventLoop.startOnNewThread(name: "flownio.test")
    defer { loop.shutdown() }
    return try await body(loop)
}
