import Deferred
import Dispatch
import Synchronization
import Testing

/// A generous bound on waits for things that happen within milliseconds: reached only when a test is
/// broken, so that it fails instead of hanging CI.
let hangGuard = DispatchTimeInterval.seconds(30)

/// Waits for `semaphore` and records a failure if it is never signalled.
func expectSignal(_ semaphore: DispatchSemaphore, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let result = semaphore.wait(timeout: .now() + hangGuard)
    #expect(result == .success, "timed out waiting for \(what)", sourceLocation: sourceLocation)
}

/// Waits for `count` signals of `semaphore`.
func expectSignals(
    _ semaphore: DispatchSemaphore, count: Int, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    for _ in 0..<count {
        expectSignal(semaphore, what, sourceLocation: sourceLocation)
    }
}

/// A value shared between a test and the work it schedules, guarded by a mutex.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Synchronization.Mutex<Value>

    init(_ value: Value) { storage = Synchronization.Mutex(value) }

    var value: Value { storage.withLock { $0 } }

    @discardableResult
    func mutate<R: Sendable>(_ body: @Sendable (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// An object whose lifetime a test follows through a weak reference.
final class LifetimeTracker: Sendable {}

/// An error for tests of failing tasks.
struct TestError: Error, Equatable {
    var code = 0
}

/// Runs the closures it is given on the calling thread, counting them.
final class CountingInlineExecutor: Executor, Sendable {
    private let submissions = Atomic<Int>(0)

    var submissionCount: Int { submissions.load(ordering: .relaxed) }

    func submit(_ body: @escaping @Sendable () -> Void) {
        submissions.add(1, ordering: .relaxed)
        body()
    }
}

/// `Deferred`'s `Future`, named so that files importing `Flow` (which has a `Future` of its own) can
/// still refer to it.
typealias DeferredFuture<Value: Sendable> = Future<Value>
