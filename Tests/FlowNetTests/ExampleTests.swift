import Foundation
import Testing

@Suite("Examples", .serialized)
struct ExampleTests {
    @Test func echoServerPrintsItsPortAndEchoesWhatNetcatWouldSend() throws {
        let server = try ExampleProcess("EchoServer", arguments: ["--port", "0"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(
            listeningPort(in: line, after: "EchoServer listening on 127.0.0.1:"), "printed: \(line)")
        let client = try LoopbackClient(port: port)
        client.send("hello, flow\n")
        #expect(client.receive { $0.hasSuffix("\n") } == "hello, flow\n")
        client.send("second line\n")
        client.shutdownWriting()
        #expect(client.receiveToEnd() == "second line\n")
    }

    @Test func httpHelloAnswersPipelinedKeepAliveRequestsAndHonoursConnectionClose() throws {
        let server = try ExampleProcess("HTTPHello", arguments: ["--port", "0", "--loops", "2"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        #expect(line.hasSuffix(" with 2 loops"))
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        let client = try LoopbackClient(port: port)
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n"
        func bodies(_ text: String) -> Int { text.components(separatedBy: "Hello, World!").count - 1 }

        // Two pipelined requests, the second cut in two: two answers, connection kept open.
        client.send(request + String(request.prefix(20)))
        client.send(String(request.dropFirst(20)))
        let first = client.receive { bodies($0) == 2 }
        #expect(bodies(first) == 2)
        #expect(first.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(first.contains("Content-Length: 13\r\n"))

        // A request asking to close: answered, then the server closes.
        client.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let last = client.receiveToEnd()
        #expect(bodies(last) == 1)
        #expect(last.contains("Connection: close\r\n"))
    }

    @Test("HTTPHello answers a Content-Length past Int.max with 413, closes that connection and keeps serving")
    func httpHelloRefusesAnOverflowingContentLength() throws {
        let server = try ExampleProcess("HTTPHello", arguments: ["--port", "0"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        let attacker = try LoopbackClient(port: port)
        attacker.send("POST / HTTP/1.1\r\nContent-Length: 9223372036854775808\r\n\r\n")
        #expect(attacker.receiveToEnd().hasPrefix("HTTP/1.1 413 Content Too Large\r\n"))
        let attackerWithHugeHead = try LoopbackClient(port: port)
        attackerWithHugeHead.send("GET /" + String(repeating: "a", count: 64 * 1024) + " HTTP/1.1\r\n\r\n")
        #expect(attackerWithHugeHead.receiveToEnd().hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
        let client = try LoopbackClient(port: port)
        client.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(client.receiveToEnd().hasSuffix("Hello, World!"))
    }

    @Test("HTTPHello closes clients that stall mid-request or idle past the timeouts, serving others meanwhile")
    func httpHelloClosesSlowClients() throws {
        let server = try ExampleProcess(
            "HTTPHello", arguments: ["--port", "0", "--request-timeout", "0.3", "--idle-timeout", "0.3"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        let baseline = server.openDescriptorCount

        // Half a head each, then nothing: a slow-client attack.
        let slowClients = try (0..<20).map { _ in try LoopbackClient(port: port) }
        for client in slowClients { client.send("GET / HTTP/1.1\r\nHost: 127.0") }
        // One request answered, then silence on a kept-alive connection.
        let idleClient = try LoopbackClient(port: port)
        idleClient.send("GET / HTTP/1.1\r\n\r\n")
        #expect(idleClient.receive { $0.hasSuffix("Hello, World!") }.hasSuffix("Hello, World!"))
        // Meanwhile another client is served at once.
        let client = try LoopbackClient(port: port)
        client.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(client.receiveToEnd().hasSuffix("Hello, World!"))

        // The server closes each of them (a stalled request is told 408 first).
        for slowClient in slowClients {
            #expect(
                slowClient.receiveToEnd()
                    == "HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        }
        #expect(idleClient.receiveToEnd() == "")
        // And its descriptors are back to what they were (each was closed before the client saw the end).
        #expect(server.openDescriptorCount == baseline)
    }

    @Test("HTTPHello at its connection limit closes the longest-stalled connection to admit a new client")
    func httpHelloEvictsStalledConnectionsAtItsLimit() throws {
        let server = try ExampleProcess("HTTPHello", arguments: ["--port", "0", "--max-connections", "5"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        let slowClients = try (0..<8).map { _ in
            let client = try LoopbackClient(port: port)
            client.send("GET / HTTP/1.1\r\nHost: 127.0")
            return client
        }
        // A client arriving now is served: the oldest stalled connection makes room for it.
        let client = try LoopbackClient(port: port)
        client.send("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(client.receiveToEnd().hasSuffix("Hello, World!"))
        // The four oldest made room for the last three and for that client (with a 503 if their half
        // head had been read); the request timeout, 10 s by default, has not closed them.
        for slowClient in slowClients.prefix(4) {
            let answer = slowClient.receiveToEnd()
            #expect(answer.isEmpty || answer.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "got \(answer)")
        }
    }

    @Test("HTTPHello on SIGTERM closes what is left at its 5 s deadline and exits, whatever its sessions' own timeouts")
    func httpHelloExitsAtItsGraceDeadline() throws {
        for loops in ["1", "2"] {
            // Session timeouts far beyond the guard: before, a session's timer outlived the connection
            // the graceful stop had closed, and kept the loop running until it fired.
            let server = try ExampleProcess(
                "HTTPHello",
                arguments: ["--port", "0", "--loops", loops, "--request-timeout", "600", "--idle-timeout", "600"],
                killAfterSeconds: 60)
            defer { server.stop() }
            let line = try #require(server.readLine())
            let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
            // Half a head, then nothing; and an answered request, then idle on a kept-alive connection.
            let halfSent = try LoopbackClient(port: port)
            halfSent.send("GET / HTTP/1.1\r\nHost: 127.0")
            let idle = try LoopbackClient(port: port)
            idle.send("GET / HTTP/1.1\r\n\r\n")
            #expect(idle.receive { $0.hasSuffix("Hello, World!") }.hasSuffix("Hello, World!"))
            server.send(SIGTERM)
            #expect(server.readLine()?.hasPrefix("HTTPHello received") == true)
            #expect(server.readLine(where: { $0.hasPrefix("HTTPHello stopped") }) != nil)
            #expect(server.waitForExit() == 0)
            #expect(halfSent.receiveToEnd() == "")
            #expect(idle.receiveToEnd() == "")
        }
    }
}
