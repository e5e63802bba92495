import Flow
import FlowNet
import Testing

@Suite("UDPSocket.receive()")
struct UDPReceiveTests {
    @Test("receive() gives the next datagram; datagrams arriving between two calls wait for the next one")
    func receiveOneAtATime() async throws {
        let loop = EventLoop.startOnNewThread(name: "udp.receive")
        defer { loop.shutdown() }
        let handlesBefore = loop.performAndWait { libuvHandleCount(loop) }
        let server = try UDPSocket.bind(on: loop)
        server.onReceive { datagram in
            server.send(Array("one".utf8), to: datagram.sender)
            server.send(Array("two".utf8), to: datagram.sender)
        }
        let client = try UDPSocket.bind(on: loop)
        let first = client.receive()
        try await client.send(Array("ping".utf8), to: server.localAddress).get()
        #expect(String(decoding: try await first.get().bytes, as: UTF8.self) == "one")
        let second = try await client.receive().get()
        #expect(String(decoding: second.bytes, as: UTF8.self) == "two")
        #expect(second.sender == server.localAddress)
        // Not receiving while no future waits: nothing of the client keeps the loop running.
        #expect(!loop.activeResources().contains { $0.summary == "UDP socket on \(client.localAddress)" })

        let pending = client.receive()
        try await client.close().get()
        await #expect(throws: EventLoopError.self) { try await pending.get() }
        await #expect(throws: EventLoopError.self) { try await client.receive().get() }
        try await server.close().get()
        #expect(loop.performAndWait { libuvHandleCount(loop) } == handlesBefore)
    }

    @Test("receive() and the onReceive handler both get the datagram")
    func receiveAlongsideTheHandler() async throws {
        let loop = EventLoop.startOnNewThread(name: "udp.receive.handler")
        defer { loop.shutdown() }
        let socket = try UDPSocket.bind(on: loop)
        let handled = Shared<[String]>([])
        socket.onReceive { datagram in handled.mutate { $0.append(String(decoding: datagram.bytes, as: UTF8.self)) } }
        let next = socket.receive()
        let sender = try UDPSocket.bind(on: loop)
        try await sender.send(Array("hi".utf8), to: socket.localAddress).get()
        #expect(String(decoding: try await next.get().bytes, as: UTF8.self) == "hi")
        #expect(handled.value == ["hi"])
        try await sender.close().get()
        try await socket.close().get()
    }
}
