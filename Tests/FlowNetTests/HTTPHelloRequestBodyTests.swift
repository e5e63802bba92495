import Foundation
import Testing

/// The responses in `text`, by status line, in order (pipelined answers follow each other's bodies
/// directly).
private func statusLines(in text: String) -> [String] {
    text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { "HTTP/1.1 " + ($0.components(separatedBy: "\r\n").first ?? "") }
}

@Suite("HTTPHello: one response per request", .serialized)
struct HTTPHelloRequestBodyTests {
    @Test("a pipelined request whose body stalls past the request deadline is answered 408 only, after the request before it")
    func stalledBodyIsAnsweredOnce() throws {
        let server = try ExampleProcess("HTTPHello", arguments: ["--port", "0", "--request-timeout", "0.3"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        let client = try LoopbackClient(port: port)
        // A complete request, then a request whose head is complete but whose body stops short.
        client.send("GET / HTTP/1.1\r\n\r\nPOST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        let received = client.receiveToEnd()
        #expect(statusLines(in: received) == ["HTTP/1.1 200 OK", "HTTP/1.1 408 Request Timeout"], "received: \(received)")
    }

    @Test("a request that begins while the connection idles gets the request timeout, not what is left of the idle one")
    func requestOnIdleConnectionGetsTheRequestTimeout() throws {
        // An idle timeout longer than the client's hang guard: a 408 that waited for it would not
        // arrive in time.
        let server = try ExampleProcess(
            "HTTPHello", arguments: ["--port", "0", "--request-timeout", "0.3", "--idle-timeout", "120"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        let client = try LoopbackClient(port: port)
        client.send("GET / HTTP/1.1\r\n\r\n")
        let first = client.receive(until: { $0.hasSuffix("Hello, World!") })
        #expect(statusLines(in: first) == ["HTTP/1.1 200 OK"], "received: \(first)")
        // The server's timer, armed for the first request's deadline when the connection opened,
        // fires now and is armed again for the idle deadline, two minutes out. The server's clock is
        // its own: there is no signal to wait for, so this waits past that first deadline.
        Thread.sleep(forTimeInterval: 0.6)
        client.send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc")
        let second = client.receiveToEnd()
        #expect(statusLines(in: second) == ["HTTP/1.1 408 Request Timeout"], "received: \(second)")
    }

    @Test("pipelined requests whose bodies trickle in are answered once each, in order, once each body is in")
    func trickledBodiesAreAnsweredInOrder() throws {
        let server = try ExampleProcess("HTTPHello", arguments: ["--port", "0", "--request-timeout", "5"])
        defer { server.stop() }
        let line = try #require(server.readLine())
        let port = try #require(listeningPort(in: line, after: "HTTPHello listening on 127.0.0.1:"), "printed: \(line)")
        let client = try LoopbackClient(port: port)
        client.send("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab")
        client.send("c")
        client.send("de" + "POST / HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\nx")
        client.send("yz")
        let received = client.receiveToEnd()
        #expect(statusLines(in: received) == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK"], "received: \(received)")
        #expect(received.components(separatedBy: "Connection: close").count == 2, "received: \(received)")
    }
}
