import Flow
import FlowNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("ServiceGroupServer example: lines")
struct ServiceGroupServerLineTests {
    @Test("answers every line with hello, however the lines are cut into writes")
    func answersEveryLine() throws {
        let server = try serverProcess(arguments: ["--port", "0", "--interval", "60"])
        let prefix = "ServiceGroupServer listening on 127.0.0.1:"
        let listening = try #require(server.readLine(where: { $0.hasPrefix(prefix) }))
        let port = try #require(Int(listening.dropFirst(prefix.count)))

        let clientLoop = Flow.EventLoop.startOnNewThread(name: "test.lines-client")
        defer { clientLoop.shutdown() }
        // Two lines in one write, then a third in two writes: three answers, and the end.
        let answers = try waitFor(TCPConnection.connect(host: "127.0.0.1", port: port, on: clientLoop)
            .flatMap { connection in
                connection.write("one\ntwo\nthr")
                    .flatMap { connection.write("ee\n") }
                    .flatMap { connection.shutdown() }
                    .flatMap { readToEnd(of: connection) }
                    .always { connection.close() }
            })
        #expect(String(decoding: answers, as: UTF8.self) == "hello\nhello\nhello\n")

        server.send(SIGTERM)
        #expect(server.waitForExit() == 0)
    }
}

/// Reads until the peer closes its side.
private func readToEnd(of connection: StreamConnection) -> Flow.Future<[UInt8]> {
    connection.read().flatMap { chunk -> Flow.Future<[UInt8]> in
        guard let chunk else { return Flow.Future([]) }
        return readToEnd(of: connection).map { chunk + $0 }
    }
}
