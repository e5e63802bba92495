import Dispatch
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The environment for a child process: this one's, except that under AddressSanitizer the child
/// neither symbolizes reports nor checks for leaks at exit (a program that exits or is killed
/// mid-work is not leaking), and, with `disablingBacktracer`, the child does not start Swift's
/// backtracer (a `swift-backtrace` process inherits the output pipes and, under the sanitizers,
/// outlives a child that traps on purpose, so the pipes never reach their end).
public func childEnvironment(disablingBacktracer: Bool = true) -> [String: String] {
    var environment = ProcessInfo.processInfo.environment
    if disablingBacktracer { environment["SWIFT_BACKTRACE"] = "enable=no" }
    let asanOptions = environment["ASAN_OPTIONS"].map { $0 + ":" } ?? ""
    environment["ASAN_OPTIONS"] = asanOptions + "symbolize=0:detect_leaks=0"
    return environment
}

/// The URL of `name`, an executable built next to the running test bundle.
public func builtExecutable(_ name: String) throws -> URL {
    let testBinary = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
    return testBinary.deletingLastPathComponent().appendingPathComponent(name)
}

/// An example program run as a child process, built next to the test bundle, its output read line
/// by line.
public final class ExampleProcess {
    private let process = Process()
    private let output = Pipe()
    private let errors: Pipe?
    private var pendingOutput: [UInt8] = []

    /// Starts the example `name` with `arguments`.
    ///
    /// - Parameters:
    ///   - capturingErrorOutput: whether standard error goes to ``errorOutput()`` (read it, or a
    ///     chatty program fills the pipe) instead of the test's own.
    ///   - killAfterSeconds: a bound after which a program still running is killed, so that a hung
    ///     child fails the test (its output ends) instead of blocking ``readLine()`` for good.
    public init(
        _ name: String, arguments: [String], capturingErrorOutput: Bool = false,
        killAfterSeconds: Int = hangGuardSeconds
    ) throws {
        let executable = try builtExecutable(name)
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw ExampleError.notBuilt(executable.path)
        }
        process.executableURL = executable
        process.arguments = arguments
        process.environment = childEnvironment(disablingBacktracer: false)
        process.standardOutput = output
        errors = capturingErrorOutput ? Pipe() : nil
        if let errors { process.standardError = errors }
        try process.run()
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(killAfterSeconds)) { [process] in
            if process.isRunning { kill(pid, SIGKILL) }
        }
    }

    /// The program's process id.
    public var processIdentifier: Int32 { process.processIdentifier }

    /// How many file descriptors the program has open (from `/proc/<pid>/fd`).
    public var openDescriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? -1
    }

    /// The next line the program printed, or `nil` if its output ended first.
    public func readLine() -> String? {
        while true {
            if let newline = pendingOutput.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pendingOutput[..<newline], as: UTF8.self)
                pendingOutput.removeSubrange(...newline)
                return line
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { return nil }
            pendingOutput += data
        }
    }

    /// Reads lines until one satisfies `condition`; `nil` if the output ended first.
    public func readLine(where condition: (String) -> Bool) -> String? {
        while let line = readLine() {
            if condition(line) { return line }
        }
        return nil
    }

    /// Everything the program wrote to standard error, read to its end (so once the program has
    /// exited); empty unless it was started `capturingErrorOutput`.
    public func errorOutput() -> String {
        guard let errors else { return "" }
        return String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// Waits for the program to exit by itself and returns its exit status.
    public func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends `signal` to the program (the examples watch `SIGTERM` and `SIGINT` to stop gracefully).
    public func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Ends the program and waits for it.
    ///
    /// With SIGKILL: a child started from a Dispatch worker thread inherits that thread's signal mask,
    /// in which SIGTERM is blocked, so `Process.terminate()` would not end it.
    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// Why an example could not be started.
public enum ExampleError: Error, CustomStringConvertible {
    /// The example's executable is missing at this path.
    case notBuilt(String)

    public var description: String {
        switch self {
        case .notBuilt(let path): "\(path) was not built; run `swift build --build-tests` first"
        }
    }
}

/// How a child program ended and what it printed.
public struct ProbeRun: Sendable {
    /// Its exit status (or the signal that ended it), -1 if it could not be found.
    public var status: Int32
    /// Everything it wrote to standard output.
    public var output: String
    /// Everything it wrote to standard error.
    public var errorOutput: String
}

/// Runs the program at `path` with `arguments`, in ``childEnvironment(disablingBacktracer:)``, to its
/// end, and returns how it ended and what it printed. Records an issue (and returns status -1) if no
/// program is there.
public func runProbe(at path: String, arguments: [String]) throws -> ProbeRun {
    guard FileManager.default.isExecutableFile(atPath: path) else {
        Issue.record("\(path) was not built; run `swift build --build-tests` first")
        return ProbeRun(status: -1, output: "", errorOutput: "")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = childEnvironment()
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    // Both pipes at once: a program filling one while the other is read to its end would block.
    let errorData = Shared(Data())
    let errorsRead = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        errorData.value = errors.fileHandleForReading.readDataToEndOfFile()
        errorsRead.signal()
    }
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    errorsRead.wait()
    process.waitUntilExit()
    return ProbeRun(
        status: process.terminationStatus,
        output: String(decoding: outputData, as: UTF8.self),
        errorOutput: String(decoding: errorData.value, as: UTF8.self))
}
