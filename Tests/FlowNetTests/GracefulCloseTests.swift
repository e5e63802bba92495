import Dispatch
import Flow
import FlowNet
import Foundation
import Testing

/// A listener on a loop of its own thread with `count` clients connected from another loop; the
/// accepted connections are kept, doing nothing. Shuts both loops down afterwards (the listener's
/// unless the body did).
private func withListenerAndClients(
    _ count: Int, _ body: (_ listener: TCPListener, _ accepted: Shared<[TCPConnection]>, _ clients: [TCPConnection]) async throws -> Void
) async throws {
    let loop = EventLoop.startOnNewThread(name: "graceful.server")
    let clientLoop = EventLoop.startOnNewThread(name: "graceful.clients")
    defer {
        loop.shutdown()
        clientLoop.shutdown()
    }
    let accepted = Shared<[TCPConnection]>([])
    let listener = try TCPListener.listen(port: 0, on: loop) { connection in
        accepted.mutate { $0.append(connection) }
    }
    var clients: [TCPConnection] = []
    for _ in 0..<count {
        clients.append(try await TCPConnection.connect(to: listener.localAddress, on: clientLoop).get())
    }
    _ = try await listener.openConnections.atOnce().filter { $0 == count }.future.get()
    try await body(listener, accepted, clients)
    for client in clients { _ = try? await client.close().get() }
}

/// `closeGracefully(deadline:)` under the round-4 attacks (issue #39, items 5, 8 and 11), and what
/// `describeActiveResources()` lists of a server's connections (issue #38).
@Suite("Graceful listener close: loop shutdown, concurrent calls, infinite deadline")
struct GracefulCloseTests {
    @Test("a loop shut down during the grace period completes closeGracefully, the connections counted as forced")
    func loopShutDownDuringGracePeriod() async throws {
        for count in [1, 40] {
            let loop = EventLoop.startOnNewThread(name: "graceful.shutdown")
            let clientLoop = EventLoop.startOnNewThread(name: "graceful.shutdown.clients")
            let listener = try TCPListener.listen(port: 0, on: loop) { _ in }
            var clients: [TCPConnection] = []
            for _ in 0..<count {
                clients.append(try await TCPConnection.connect(to: listener.localAddress, on: clientLoop).get())
            }
            _ = try await listener.openConnections.atOnce().filter { $0 == count }.future.get()
            let stopped = listener.closeGracefully(deadline: 60)
            loop.shutdown()
            // Completed while the loop closed, before `shutdown()` returned.
            #expect(try stopped.result?.get() == count)
            for client in clients { #expect(try await client.read().get() == nil) }
            for client in clients { _ = try await client.close().get() }
            clientLoop.shutdown()
        }
    }

    @Test("concurrent closeGracefully calls share one outcome: the connections the earliest deadline closed")
    func concurrentCallsShareOneOutcome() async throws {
        try await withListenerAndClients(4) { listener, accepted, _ in
            let first = listener.closeGracefully(deadline: 60)
            // One connection finishes by itself; the other three are closed by a later call's deadline.
            _ = try await accepted.value[0].close().get()
            let later = await withTaskGroup(of: Future<Int>.self) { group in
                for _ in 0..<7 { group.addTask { listener.closeGracefully(deadline: 0) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(try await first.get() == 3)
            for call in later { #expect(try await call.get() == 3) }
            // And a call once it is all over gives the same.
            #expect(try await listener.closeGracefully(deadline: 5).get() == 3)
        }
    }

    @Test("closeGracefully(deadline: .infinity) waits for the connections to finish, closing none")
    func infiniteDeadlineWaits() async throws {
        try await withListenerAndClients(2) { listener, accepted, _ in
            let stopped = listener.closeGracefully(deadline: .infinity)
            _ = try await accepted.value[0].close().get()
            #expect(stopped.result == nil)
            _ = try await accepted.value[1].close().get()
            #expect(try await stopped.get() == 0)
        }
    }

    @Test("describeActiveResources lists a just-accepted connection and one in the middle of a request")
    func everyOpenConnectionIsListed() async throws {
        try await withListenerAndClients(2) { listener, accepted, clients in
            let loop = listener.loop
            let connections = { loop.activeResources().filter { $0.kind == .connection }.map(\.summary) }
            // Just accepted, nobody reading.
            var listed = connections()
            #expect(listed.count == 2, "\(loop.describeActiveResources())")
            #expect(listed.allSatisfy { $0.hasPrefix("TCP connection from 127.0.0.1:") })
            // In the middle of a request: half of it read, nothing waiting for the rest yet.
            try await clients[0].write(Array("GET / HTTP/1.1\r\nHost: exam".utf8)).get()
            #expect(try await accepted.value[0].read().get() == Array("GET / HTTP/1.1\r\nHost: exam".utf8))
            listed = connections()
            #expect(listed.count == 2, "\(loop.describeActiveResources())")
            #expect(loop.describeActiveResources().contains("connection: TCP connection from 127.0.0.1:"))
            for connection in accepted.value { _ = try await connection.close().get() }
            #expect(connections().isEmpty)
        }
    }
}
