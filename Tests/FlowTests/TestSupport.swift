import Dispatch
import Flow
import Foundation
import Synchronization
import Testing

/// A generous bound on waits for things that happen within milliseconds: hit only when a test is
/// broken, so that a broken test fails instead of hanging CI.
let hangGuard: DispatchTime.Duration = .seconds(30)

extension DispatchTime {
    typealias Duration = DispatchTimeInterval
}

/// Waits for `semaphore` and records a failure if it is never signalled.
func expectSignal(_ semaphore: DispatchSemaphore, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let result = semaphore.wait(timeout: .now() + hangGuard)
    #expect(result == .success, "timed out waiting for \(what)", sourceLocation: sourceLocation)
}

/// A value shared between a test and the work it schedules, guarded by a mutex.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Synchronization.Mutex<Value>

    init(_ value: Value) { storage = Synchronization.Mutex(value) }

    var value: Value { storage.withLock { $0 } }

    @discardableResult
    func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// Runs a loop on a new thread for the duration of `body`, then shuts it down.
func withLoopOnOwnThread<T>(_ body: (EventLoop) throws -> T) rethrows -> T {
    let loop = EventLoop.startOnNewThread(name: "test.loop")
    defer { loop.shutdown() }
    return try body(loop)
}

/// The output of a run of the `MainLoopProbe` child process.
struct ProbeRun {
    var status: Int32
    var output: String
    var errorOutput: String
}

/// Runs a probe executable (`MainLoopProbe` by default), built next to the test bundle, with `scenario`.
func runProbe(_ scenario: String, executable: String = "MainLoopProbe") throws -> ProbeRun {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    let probe = testBinary.deletingLastPathComponent().appendingPathComponent(executable)
    guard FileManager.default.isExecutableFile(atPath: probe.path) else {
        Issue.record("\(executable) was not built at \(probe.path); run `swift build --build-tests` first")
        return ProbeRun(status: -1, output: "", errorOutput: "")
    }
    let process = Process()
    process.executableURL = probe
    process.arguments = [scenario]
    process.environment = childEnvironment()
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ProbeRun(
        status: process.terminationStatus,
        output: String(decoding: outputData, as: UTF8.self),
        errorOutput: String(decoding: errorData, as: UTF8.self))
}

/// Checks that every future a test created (and every future derived from those) has been freed
/// when the test ends: a leak check on each test of a suite.
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
        // Futures completed on other threads may be let go of there just after the test saw their
        // results: wait for that (on a signal, not a sleep), a leak being a count that never gets there.
        let noneAlive = await count.waitUntilNoneAlive(timeout: .seconds(10))
        #expect(noneAlive, "futures created by the test are still alive when it ends (\(count.value))")
    }
}

extension Trait where Self == ChecksLiveFutures {
    /// Fails a test that leaves futures alive when it ends.
    static var checksLiveFutures: ChecksLiveFutures { ChecksLiveFutures() }
}

/// The environment for a child process: this one's, except that the child that traps on purpose does
/// not start Swift's backtracer (a `swift-backtrace` process inherits the output pipes and, under the
/// sanitizers, outlives the child, so the pipes never reach their end), and under AddressSanitizer it
/// neither symbolizes reports nor checks for leaks at exit (a program that exits mid-work is not
/// leaking).
func childEnvironment() -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    let asanOptions = environment["ASAN_OPTIONS"].map { $0 + ":" } ?? ""
    environment["ASAN_OPTIONS"] = asanOptions + "symbolize=0:detect_leaks=0"
    return environment
}
