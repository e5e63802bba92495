import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Graceful stop of the example servers", .serialized)
struct GracefulStopTests {
    @Test func echoServerOnSIGTERMStopsAcceptingLetsTheOpenConnectionFinishAndExitsZero() throws {
        let server = try ExampleProcess("EchoServer", arguments: ["--port", "0", "--drain-seconds", "20"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "EchoServer listening on 127.0.0.1:"), "printed: \(line)")
        let client = try LoopbackClient(port: port)
        client.send("one\n")
        #expect(client.receive { $0.hasSuffix("\n") } == "one\n")

        server.send(SIGTERM)
        #expect(server.readLine() == "EchoServer received SIGTERM: no longer accepting; waiting up to 20.0 s for 1 open connection")
        #expect(throws: (any Error).self, "no longer accepting") { try LoopbackClient(port: port) }

        // The open connection still works, and the server ends once it does.
        client.send("two\n")
        client.shutdownWriting()
        #expect(client.receiveToEnd() == "two\n")
        #expect(server.readLine() == "EchoServer stopped: every connection closed")
        #expect(server.waitForExit() == 0)
    }

    @Test func echoServerClosesConnectionsStillOpenAtTheDeadlineAndExitsZero() throws {
        let server = try ExampleProcess("EchoServer", arguments: ["--port", "0", "--drain-seconds", "0.2"])
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

    @Test("EchoServer's count of open connections follows connections opening and closing; the stop waits for it to reach 0")
    func echoServerCountsOpenConnections() throws {
        let server = try ExampleProcess("EchoServer", arguments: ["--port", "0", "--drain-seconds", "20"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "EchoServer listening on 127.0.0.1:"), "printed: \(line)")
        let staying = try LoopbackClient(port: port)
        let leaving = try LoopbackClient(port: port)
        for client in [staying, leaving] {
            client.send("hi\n")
            #expect(client.receive { $0.hasSuffix("\n") } == "hi\n")
        }
        leaving.shutdownWriting()
        #expect(leaving.receiveToEnd() == "", "the server closed the connection that ended")

        server.send(SIGTERM)
        #expect(server.readLine() == "EchoServer received SIGTERM: no longer accepting; waiting up to 20.0 s for 1 open connection")
        staying.shutdownWriting()
        #expect(staying.receiveToEnd() == "")
        #expect(server.readLine() == "EchoServer stopped: every connection closed")
        #expect(server.waitForExit() == 0)
    }

    @Test func echoServerWithNoConnectionStopsAtOnce() throws {
        let server = try ExampleProcess("EchoServer", arguments: ["--port", "0"])
        defer { server.stop() }
        _ = try #require(server.readLine())
        server.send(SIGTERM)
        #expect(server.readLine() == "EchoServer received SIGTERM: no longer accepting; waiting up to 5.0 s for 0 open connections")
        #expect(server.readLine() == "EchoServer stopped")
        #expect(server.waitForExit() == 0)
    }
}

@Suite("Graceful stop of HTTPHello", .serialized)
struct HTTPHelloStopTests {
    @Test func httpHelloOnSIGTERMStopsAcceptingAndExitsZero() throws {
        let server = try ExampleProcess("HTTPHello", arguments: ["--port", "0"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        server.send(SIGTERM)
        #expect(server.readLine() == "HTTPHello received SIGTERM: no longer accepting; open connections get up to 5 s")
        #expect(server.readLine() == "HTTPHello stopped")
        #expect(server.waitForExit() == 0)
        #expect(throws: (any Error).self) { try LoopbackClient(port: port) }
    }
}
