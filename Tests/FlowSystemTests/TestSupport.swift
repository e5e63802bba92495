import Dispatch
import Flow
import Foundation
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Testing

/// Runs `body` on a new loop on the calling thread until the loop's `run()` returns, then checks that
/// the test left no libuv handle behind (not even a stopped one): every loop of these tests checks that.
func runLoop(
    _ name: String = "test.loop", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (EventLoop) -> Void
) throws {
    try runLoopCheckingHandles(name, sourceLocation: sourceLocation, body)
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
