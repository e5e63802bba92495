import CLibUV
import Dispatch
import Flow
import Testing

/// How many libuv handles `loop` holds, its own included (the wake-up handle, the deadline timer).
public func libuvHandleCount(_ loop: EventLoop) -> Int {
    var count = 0
    withUnsafeMutablePointer(to: &count) { counter in
        uv_walk(loop.unsafeLoopPointer, { _, argument in
            argument!.assumingMemoryBound(to: Int.self).pointee += 1
        }, counter)
    }
    return count
}

/// Runs `body` on a new loop on the calling thread, and returns once the loop's `run()` returns:
/// when every handle the test opened has been closed. A watchdog stops a loop still running after
/// ``hangGuardSeconds`` and records a failure.
public func runLoop(
    _ name: String = "test.loop", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (EventLoop) -> Void
) throws {
    try runGuardedLoop(name, checkingHandles: false, sourceLocation: sourceLocation, body)
}

/// Like ``runLoop(_:sourceLocation:_:)``, and checks that the test left no libuv handle behind on the
/// loop: not even one that is stopped (which would not keep `run()` going) but was never closed.
public func runLoopCheckingHandles(
    _ name: String = "test.loop", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (EventLoop) -> Void
) throws {
    try runGuardedLoop(name, checkingHandles: true, sourceLocation: sourceLocation, body)
}

private func runGuardedLoop(
    _ name: String, checkingHandles: Bool, sourceLocation: SourceLocation,
    _ body: @escaping @Sendable (EventLoop) -> Void
) throws {
    let loop = EventLoop(name: name)
    let isFinished = Shared(false)
    let timedOut = Shared(false)
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(hangGuardSeconds)) {
        guard !isFinished.value else { return }
        timedOut.value = true
        loop.stop()
    }
    let handlesBefore = Shared(0)
    loop.execute {
        if checkingHandles { handlesBefore.value = libuvHandleCount(loop) }
        body(loop)
    }
    try loop.run()
    isFinished.value = true
    #expect(!timedOut.value, "the loop still had open handles or pending work after \(hangGuardSeconds) s",
            sourceLocation: sourceLocation)
    if checkingHandles {
        // The loop has stopped and this thread ran it: walking its handles here is safe.
        let handlesAfter = libuvHandleCount(loop)
        #expect(handlesAfter == handlesBefore.value, "libuv handles left open", sourceLocation: sourceLocation)
    }
    try loop.close()
}

/// Runs a loop on a new thread for the duration of `body`, then shuts it down.
public func withLoopOnOwnThread<T>(name: String = "test.loop", _ body: (EventLoop) throws -> T) rethrows -> T {
    let loop = EventLoop.startOnNewThread(name: name)
    defer { loop.shutdown() }
    return try body(loop)
}

/// Runs `body` against a loop on its own thread, then checks that the loop holds as many libuv handles
/// as before (each test closes what it opened), and shuts the loop down.
public func withCountedLoop(
    _ name: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (EventLoop) async throws -> Void
) async throws {
    let loop = EventLoop.startOnNewThread(name: name)
    defer { loop.shutdown() }
    let handlesBefore = loop.performAndWait { libuvHandleCount(loop) }
    try await body(loop)
    #expect(loop.performAndWait { libuvHandleCount(loop) } == handlesBefore, "libuv handles left open",
            sourceLocation: sourceLocation)
}
