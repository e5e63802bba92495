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
}
