import Deferred
import Dispatch
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Synchronization
import Testing

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
