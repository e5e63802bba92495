import Dispatch
import Flow
import FlowNet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The ServiceGroupServer example, run as a child process built next to the test bundle.
final class ServerProcess {
    let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private var pendingOutput: [UInt8] = []

    init(arguments: [String]) throws {
        let testBinary = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        process.executableURL = testBinary.deletingLastPathComponent().appendingPathComponent("ServiceGroupServer")
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "symbolize=0:detect_leaks=0"
        process.environment = environment
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // A child that hangs would block `readLine` for good: end it after a generous bound.
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(60)) { [process] in
            if process.isRunning { kill(pid, SIGKILL) }
        }
    }

    /// The next line the program printed, or `nil` if its output ended first.
    func readLine() -> String? {
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
    func readLine(where condition: (String) -> Bool) -> String? {
        while let line = readLine() {
            if condition(line) { return line }
        }
        return nil
    }

    /// Everything the program wrote to standard error, once it has exited.
    func errorOutput() -> String {
        String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Blocks until `future` completes (for at most a minute) and returns its value.
func waitFor<Value>(_ future: Flow.Future<Value>) throws -> Value {
    let done = DispatchSemaphore(value: 0)
    let outcome = Shared<Flow.Result<Value>?>(nil)
    future.onResult(on: .none) { result in
        outcome.set(result)
        done.signal()
    }
    guard done.wait(timeout: .now() + .seconds(60)) == .success, let result = outcome.value else {
        throw CancellationError()
    }
    return try result.get()
}

@Suite("ServiceGroupServer example")
struct ServiceGroupServerTests {
    @Test func servesThenStopsGracefullyOnSIGTERM() throws {
        let server = try ServerProcess(arguments: ["--port", "0", "--interval", "0.01"])
        let prefix = "ServiceGroupServer listening on 127.0.0.1:"
        let listening = try #require(server.readLine(where: { $0.hasPrefix(prefix) }))
        let port = try #require(Int(listening.dropFirst(prefix.count)))

        let clientLoop = Flow.EventLoop.startOnNewThread(name: "test.client")
        defer { clientLoop.shutdown() }
        let answer = try waitFor(TCPConnection.connect(host: "127.0.0.1", port: port, on: clientLoop)
            .flatMap { connection in
                connection.write("hi\n").flatMap { connection.read() }.always { connection.close() }
            })
        #expect(answer.map { String(decoding: $0, as: UTF8.self) } == "hello\n")

        // The periodic job runs.
        #expect(server.readLine(where: { $0.hasPrefix("tick ") }) != nil)

        kill(server.process.processIdentifier, SIGTERM)
        #expect(server.readLine(where: { $0 == "ServiceGroupServer stopped" }) != nil)
        #expect(server.waitForExit() == 0)
    }

    @Test func helpDescribesEveryOption() throws {
        let server = try ServerProcess(arguments: ["--help"])
        var lines: [String] = []
        while let line = server.readLine() { lines.append(line) }
        let help = lines.joined(separator: "\n")
        #expect(server.waitForExit() == 0)
        for option in ["--host", "--port", "--loops", "--interval", "--shutdown-deadline", "--log-level"] {
            #expect(help.contains(option), "--help does not mention \(option)")
        }
    }

    @Test func aBadValueIsAUsageErrorWithStatus64() throws {
        let server = try ServerProcess(arguments: ["--port", "70000"])
        #expect(server.readLine() == nil)
        let status = server.waitForExit()
        #expect(status == 64)
        #expect(server.errorOutput().contains("--port must be from 0 to 65535"))
    }
}
