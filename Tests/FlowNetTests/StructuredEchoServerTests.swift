import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("EchoServer --structured: a server as structured tasks", .serialized)
struct StructuredEchoServerTests {
    @Test func echoesEveryClientAndOnSIGTERMLetsTheOpenConnectionFinishThenExitsZero() throws {
        let server = try ExampleProcess("EchoServer", arguments: ["--port", "0", "--structured", "--drain-seconds", "20"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "EchoServer listening on 127.0.0.1:"), "printed: \(line)")
        let first = try LoopbackClient(port: port)
        let second = try LoopbackClient(port: port)
        first.send("one\n")
        second.send("other\n")
        #expect(first.receive { $0.hasSuffix("\n") } == "one\n")
        #expect(second.receive { $0.hasSuffix("\n") } == "other\n")

        server.send(SIGTERM)
        #expect(server.readLine() == "EchoServer received SIGTERM: no longer accepting; waiting up to 20.0 s for 2 open connections")
        #expect(throws: (any Error).self, "no longer accepting") { try LoopbackClient(port: port) }

        // The open connections' tasks still serve them; the server ends once both are done.
        first.send("two\n")
        first.shutdownWriting()
        #expect(first.receiveToEnd() == "two\n")
        second.shutdownWriting()
        #expect(second.receiveToEnd() == "")
        #expect(server.readLine() == "EchoServer stopped: every connection closed")
        #expect(server.waitForExit() == 0)
    }

    @Test func closesAConnectionStillOpenAtTheDeadlineAndExitsZero() throws {
        let server = try ExampleProcess("EchoServer", arguments: ["--port", "0", "--structured", "--drain-seconds", "0.2"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "EchoServer listening on 127.0.0.1:"), "printed: \(line)")
        let client = try LoopbackClient(port: port)
        client.send("ping\n")
        #expect(client.receive { $0.hasSuffix("\n") } == "ping\n")

        server.send(SIGINT)
        #expect(server.readLine() == "EchoServer received SIGINT: no longer accepting; waiting up to 0.2 s for 1 open connection")
        #expect(server.readLine() == "EchoServer deadline reached: closing 1 connection")
        #expect(server.readLine() == "EchoServer stopped: every connection closed")
        #expect(client.receiveToEnd() == "", "the server closed the connection")
        #expect(server.waitForExit() == 0)
    }
}
