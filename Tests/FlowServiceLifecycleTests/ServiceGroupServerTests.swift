import Dispatch
import Flow
import FlowNet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The ServiceGroupServer example, run as a child process built next to the test bundle (killed after a
/// minute at most).
func serverProcess(arguments: [String]) throws -> ExampleProcess {
    try ExampleProcess("ServiceGroupServer", arguments: arguments, capturingErrorOutput: true, killAfterSeconds: 60)
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
        let server = try serverProcess(arguments: ["--port", "0", "--interval", "0.01"])
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

        server.send(SIGTERM)
        #expect(server.readLine(where: { $0 == "ServiceGroupServer stopped" }) != nil)
        #expect(server.waitForExit() == 0)
    }

    @Test func helpDescribesEveryOption() throws {
        let server = try serverProcess(arguments: ["--help"])
        var lines: [String] = []
        while let line = server.readLine() { lines.append(line) }
        let help = lines.joined(separator: "\n")
        #expect(server.waitForExit() == 0)
        for option in ["--host", "--port", "--loops", "--interval", "--shutdown-deadline", "--log-level"] {
            #expect(help.contains(option), "--help does not mention \(option)")
        }
    }

    @Test func aBadValueIsAUsageErrorWithStatus64() throws {
        let server = try serverProcess(arguments: ["--port", "70000"])
        #expect(server.readLine() == nil)
        let status = server.waitForExit()
        #expect(status == 64)
        #expect(server.errorOutput().contains("--port must be from 0 to 65535"))
    }
}
