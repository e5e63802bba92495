import CLibUV
import Dispatch
import Flow
import Foundation
import Synchronization
import Testing

/// A generous bound on waits for things that take milliseconds: reached only by a broken test.
let hangGuardSeconds = 30

/// A value shared between a test and the work it schedules, guarded by a mutex.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Synchronization.Mutex<Value>

    init(_ value: Value) { storage = Synchronization.Mutex(value) }

    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    @discardableResult
    func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// State a test keeps between the callbacks of its loop.
final class LoopState<Value>: @unchecked Sendable {
    // @unchecked Sendable: only touched on the test's loop, whose callbacks all run on the thread
    // inside `runLoop`.
    var value: Value

    init(_ value: Value) { self.value = value }
}

/// How many libuv handles `loop` holds, its own included.
func libuvHandleCount(_ loop: EventLoop) -> Int {
    var count = 0
    withUnsafeMutablePointer(to: &count) { counter in
        uv_walk(loop.unsafeLoopPointer, { _, argument in
            argument!.assumingMemoryBound(to: Int.self).pointee += 1
        }, counter)
    }
    return count
}

/// Runs `body` on a new loop on the calling thread until the loop's `run()` returns, then checks that
/// the test left no libuv handle behind (not even a stopped one). A watchdog stops a loop still running
/// after ``hangGuardSeconds`` and records a failure.
func runLoop(
    _ name: String = "system.test", sourceLocation: SourceLocation = #_sourceLocation,
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
        handlesBefore.value = libuvHandleCount(loop)
        body(loop)
    }
    try loop.run()
    isFinished.value = true
    #expect(!timedOut.value, "the loop still had open handles or pending work after \(hangGuardSeconds) s",
            sourceLocation: sourceLocation)
    // The loop has stopped and this thread ran it: walking its handles here is safe.
    #expect(libuvHandleCount(loop) == handlesBefore.value, "libuv handles left open", sourceLocation: sourceLocation)
    try loop.close()
}

/// The targets of this process's open descriptors (`/proc/self/fd`): paths, `socket:[N]`, `pipe:[N]`.
func openDescriptorTargets() -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)") }
}

/// How many descriptors of this process refer to something inside `folder`. Each test works in a
/// folder of its own, so parallel tests do not disturb the count.
func openDescriptorCount(inside folder: String) -> Int {
    openDescriptorTargets().filter { $0.hasPrefix(folder + "/") || $0 == folder }.count
}

/// A new empty folder for one test, removed by `cleanUp()`.
final class TemporaryFolder: Sendable {
    let path: String

    init(_ label: String = #function) throws {
        let base = FileManager.default.temporaryDirectory.path
        let name = "flow-\(label.prefix { $0.isLetter || $0.isNumber })-\(UUID().uuidString.prefix(8))"
        path = base + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `future`'s loop work and waits on this (non-loop) thread for its result.
func wait<Value>(for future: Future<Value>) -> Result<Value>? {
    let done = DispatchSemaphore(value: 0)
    future.onResult(on: .none) { _ in done.signal() }
    guard done.wait(timeout: .now() + .seconds(hangGuardSeconds)) == .success else { return nil }
    return future.result
}
