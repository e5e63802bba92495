import Flow
import FlowNet
import Foundation
import Testing

/// The connection-wide idle timeout (`StreamConnection.idleTimeout`), as NIO's IdleStateHandler or
/// Hummingbird's idle timeout: a connection with no byte read or written for the interval is closed,
/// with a reason its reader sees.
@Suite("Connections: the idle timeout")
struct ConnectionIdleTimeoutTests {
    @Test("a connection idle for its timeout is closed, and its lines() and later reads fail with the reason")
    func anIdleConnectionIsClosedWithItsReason() async throws {
        try await withConnectedTCPPair(loopName: "net.idle-timeout") { server, client, _ in
            try await client.writeAsync("before the silence\n")
            server.idleTimeout = 0.05
            #expect(server.idleTimeout == 0.05)
            var lines: [String] = []
            await #expect(throws: ConnectionIdleTimeoutError(seconds: 0.05)) {
                for try await line in server.lines() { lines.append(line) }
            }
            #expect(lines == ["before the silence"])
            #expect(!server.isOpen)
            await #expect(throws: ConnectionIdleTimeoutError(seconds: 0.05)) { try await server.read().get() }
            // The peer sees the close as the end of the stream.
            #expect(try await client.read().get() == nil)
        }
    }

    @Test("an open connection is listed with its idle timeout, and without it once the timeout is removed")
    func theIdleTimeoutIsListedWithTheConnection() async throws {
        try await withConnectedTCPPair(loopName: "net.idle-timeout") { server, _, loop in
            server.idleTimeout = 3600
            let listed = loop.describeActiveResources()
            #expect(listed.contains("TCP connection from "), "\(listed)")
            #expect(listed.contains("idle timeout 3600.0 s"), "\(listed)")
            server.idleTimeout = nil
            #expect(server.idleTimeout == nil)
            #expect(!loop.describeActiveResources().contains("idle timeout"))
            #expect(server.isOpen)
        }
    }

    @Test("a listener's connectionIdleTimeout is each accepted connection's idle timeout")
    func aListenersDefaultReachesItsConnections() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.idle-default")
        defer { loop.shutdown() }
        let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
        let listener = try loop.performAndWait {
            try TCPListener.listen(port: 0, on: loop) { acceptedContinuation.yield($0) }
        }
        #expect(listener.connectionIdleTimeout == nil)
        listener.connectionIdleTimeout = 0.05
        let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
        var iterator = accepted.makeAsyncIterator()
        let server = try #require(await iterator.next())
        #expect(server.idleTimeout == 0.05)
        await #expect(throws: ConnectionIdleTimeoutError(seconds: 0.05)) { try await server.read().get() }
        #expect(try await client.read().get() == nil)
        _ = try await join(client.close(), listener.close()).get()
    }

    @Test("ConnectionIdleTimeoutError says what happened")
    func theErrorSaysWhatHappened() {
        #expect("\(ConnectionIdleTimeoutError(seconds: 30))" == "closed after 30.0 s with no byte read or written")
    }
}
