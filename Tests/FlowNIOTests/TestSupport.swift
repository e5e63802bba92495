import Dispatch
import Flow
import NIOPosix
import Synchronization
import Testing

/// A value shared between a test and the work it schedules, guarded by a lock ThreadSanitizer sees
/// (Flow's `Locked`: `Synchronization.Mutex` locks where ThreadSanitizer cannot see it).
final class Shared<Value: Sendable>: Sendable {
    private let storage: Locked<Value>

    init(_ value: Value) { storage = Locked(value) }

    var value: Value { storage.withLock { $0 } }

    func set(_ newValue: Value) { storage.withLock { $0 = newValue } }
}

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

/// Checks that every future a test created has been freed when the test ends.
struct ChecksLiveFutures: TestTrait, SuiteTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else {
            try await function()
            return
        }
        let count = LiveFutureCount()
        try await count.track { try await function() }
        let noneAlive = await count.waitUntilNoneAlive(timeout: .seconds(10))
        #expect(noneAlive, "futures created by the test are still alive when it ends (\(count.value))")
    }
}

extension Trait where Self == ChecksLiveFutures {
    /// Fails a test that leaves futures alive when it ends.
    static var checksLiveFutures: ChecksLiveFutures { ChecksLiveFutures() }
}
