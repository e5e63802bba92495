import Dispatch
import Flow
import FlowTesting
import Synchronization
import Testing

/// A generous bound on waits for things that happen within milliseconds: hit only when a test is
/// broken, so that a broken test fails instead of hanging.
let hangGuard: DispatchTimeInterval = .seconds(30)

/// Waits for `semaphore` and records a failure if it is never signalled.
func expectSignal(_ semaphore: DispatchSemaphore, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let result = semaphore.wait(timeout: .now() + hangGuard)
    #expect(result == .success, "timed out waiting for \(what)", sourceLocation: sourceLocation)
}

/// Values appended from any thread, read by the test.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Synchronization.Mutex<[Value]>([])

    func append(_ value: Value) { storage.withLock { $0.append(value) } }

    var values: [Value] { storage.withLock { $0 } }

    var count: Int { storage.withLock { $0.count } }
}

/// A value shared between a test and the work it schedules, guarded by a mutex.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Synchronization.Mutex<Value>

    init(_ value: Value) { storage = Synchronization.Mutex(value) }

    var value: Value { storage.withLock { $0 } }

    @discardableResult
    func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

extension VirtualTimeScheduler {
    /// The clock's time since creation, in milliseconds: handy for comparing with literal lists.
    var nowMilliseconds: Int64 {
        let (seconds, attoseconds) = now.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

/// Runs a loop on a new thread for the duration of `body`, then shuts it down.
func withLoopOnOwnThread<T>(_ body: (EventLoop) throws -> T) rethrows -> T {
    let loop = EventLoop.startOnNewThread(name: "timers.test.loop")
    defer { loop.shutdown() }
    return try body(loop)
}
