import Dispatch
import Testing

/// A generous bound, in seconds, on waits for things that take milliseconds: reached only by a broken
/// test, so that it fails instead of hanging CI.
public let hangGuardSeconds = 30

/// ``hangGuardSeconds`` as a Dispatch interval, for semaphore waits.
public let hangGuard: DispatchTimeInterval = .seconds(hangGuardSeconds)

/// Waits for `semaphore` and records a failure if it is never signalled.
public func expectSignal(
    _ semaphore: DispatchSemaphore, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    let result = semaphore.wait(timeout: .now() + hangGuard)
    #expect(result == .success, "timed out waiting for \(what)", sourceLocation: sourceLocation)
}

/// Waits for `count` signals of `semaphore`.
public func expectSignals(
    _ semaphore: DispatchSemaphore, count: Int, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    for _ in 0..<count {
        expectSignal(semaphore, what, sourceLocation: sourceLocation)
    }
}
