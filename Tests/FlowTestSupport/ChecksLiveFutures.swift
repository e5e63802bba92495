import Flow
import Testing

/// Checks that every future a test created (and every future derived from those) has been freed
/// when the test ends: a leak check on each test of a suite.
public struct ChecksLiveFutures: TestTrait, SuiteTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else {
            try await function()
            return
        }
        let count = LiveFutureCount()
        try await count.track { try await function() }
        // Futures completed on other threads may be let go of there just after the test saw their
        // results: wait for that (on a signal, not a sleep), a leak being a count that never gets there.
        let noneAlive = await count.waitUntilNoneAlive(timeout: .seconds(10))
        #expect(noneAlive, "futures created by the test are still alive when it ends (\(count.value))")
    }
}

extension Trait where Self == ChecksLiveFutures {
    /// Fails a test that leaves futures alive when it ends.
    public static var checksLiveFutures: ChecksLiveFutures { ChecksLiveFutures() }
}
