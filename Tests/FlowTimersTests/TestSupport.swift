import Dispatch
import Flow
import FlowTesting
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Synchronization
import Testing

/// Values appended from any thread, read by the test.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Synchronization.Mutex<[Value]>([])

    func append(_ value: Value) { storage.withLock { $0.append(value) } }

    var values: [Value] { storage.withLock { $0 } }

    var count: Int { storage.withLock { $0.count } }
}

extension VirtualTimeScheduler {
    /// The clock's time since creation, in milliseconds: handy for comparing with literal lists.
    var nowMilliseconds: Int64 {
        let (seconds, attoseconds) = now.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

/// Keeps `loop` busy in a job of its own, once it has started it, until the returned semaphore is
/// signalled: whatever is scheduled meanwhile waits for the release.
func holdLoop(_ loop: EventLoop) -> DispatchSemaphore {
    let loopHeld = DispatchSemaphore(value: 0)
    let releaseLoop = DispatchSemaphore(value: 0)
    loop.execute {
        loopHeld.signal()
        releaseLoop.wait()
    }
    expectSignal(loopHeld, "the loop to be held")
    return releaseLoop
}
