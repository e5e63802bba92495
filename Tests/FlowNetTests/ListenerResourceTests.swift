import Dispatch
import Flow
import FlowNet
import Foundation
import Testing

/// What each FlowNet handle tells `EventLoop.activeResources()` while open, and that it is gone once
/// closed; and a listener's count of its open connections and its graceful close.
@Suite("FlowNet handles in the loop's resources; graceful listener close")
struct ListenerResourceTests {
    /// The named resources of `loop` (its own thread's token left out).
    private func named(_ loop: EventLoop) -> [LoopResource] {
        loop.activeResources().filter { $0.kind != .keepAliveToken && $0.kind != .timer && $0.kind != .queuedWork }
    }

    @Test("a TCP listener, its accepted connection, a client connection and a UDP socket are listed while open, and gone once closed")
    func tcpAndUDPResources() async throws {
        try await withCountedLoop("resources.tcp") { loop in
            let accepted = Shared<TCPConnection?>(nil)
            let listener = try TCPListener.listen(port: 0, on: loop) { connection in
                connection.onRead { _ in }
                accepted.value = connection
            }
            let listenerEntry = try #require(named(loop).first { $0.kind == .listener })
            #expect(listenerEntry.summary == "TCP listener on \(listener.localAddress)")
            #if DEBUG
                #expect(listenerEntry.creationSite?.hasPrefix("FlowNetTests/ListenerResourceTests.swift:") == true)
            #endif

            let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
            try await waitUntil(listener.openConnections, is: 1)
            client.onRead { _ in }
            let resources = named(loop)
            let connections = resources.filter { $0.kind == .connection }.map(\.summary)
            #expect(connections.contains("TCP connection to \(listener.localAddress)"), "\(resources)")
            #expect(connections.contains { $0.hasPrefix("TCP connection from 127.0.0.1:") && $0.hasSuffix("(accepted on \(listener.localAddress))") })

            let socket = try UDPSocket.bind(on: loop)
            socket.onReceive { _ in }
            #expect(named(loop).contains(LoopResource(kind: .datagramSocket, summary: "UDP socket on \(socket.localAddress)")))

            try await socket.close().get()
            #expect(!named(loop).contains { $0.kind == .datagramSocket })
            try await client.close().get()
            try await accepted.value!.close().get()
            #expect(!named(loop).contains { $0.kind == .connection })
            try await listener.close().get()
            #expect(named(loop).isEmpty, "\(named(loop))")
        }
    }

    @Test("a Unix-socket listener and its connections are listed while open, and gone once closed")
    func pipeResources() async throws {
        let path = NSTemporaryDirectory() + "flow-resources-\(getpid()).sock"
        try await withCountedLoop("resources.pipe") { loop in
            let accepted = Shared<PipeConnection?>(nil)
            let listener = try PipeListener.listen(path: path, on: loop) { connection in
                connection.onRead { _ in }
                accepted.value = connection
            }
            #expect(named(loop).contains(LoopResource(kind: .listener, summary: "Unix-socket listener on \(path)")))
            let client = try await PipeConnection.connect(toPath: path, on: loop).get()
            try await waitUntil(listener.openConnections, is: 1)
            client.onRead { _ in }
            let connections = named(loop).filter { $0.kind == .connection }.map(\.summary)
            #expect(connections.sorted() == ["Unix-socket connection accepted on \(path)", "Unix-socket connection to \(path)"])
            try await client.close().get()
            try await accepted.value!.close().get()
            try await listener.close().get()
            #expect(named(loop).isEmpty, "\(named(loop))")
        }
    }

    @Test("closeGracefully stops accepting, waits for connections that finish, and completes with 0 closed by force")
    func gracefulCloseWithConnectionsThatFinish() async throws {
        try await withCountedLoop("graceful.finish") { loop in
            let accepted = Shared<[TCPConnection]>([])
            let listener = try TCPListener.listen(port: 0, on: loop) { connection in
                accepted.mutate { $0.append(connection) }
            }
            let counts = Shared<[Int]>([])
            let bag = DisposeBag()
            bag += listener.openConnections.onValue(on: .none) { count in counts.mutate { $0.append(count) } }
            let clients = [
                try await TCPConnection.connect(to: listener.localAddress, on: loop).get(),
                try await TCPConnection.connect(to: listener.localAddress, on: loop).get(),
            ]
            try await waitUntil(listener.openConnections, is: 2)
            let address = listener.localAddress
            let stopped = listener.closeGracefully(deadline: 60)
            // No longer accepting: a new client is refused. The port is free once the listener
            // closed, and a test running in parallel may have bound it meanwhile: a connection that
            // succeeds is to that test's listener, and this one must still have accepted nothing.
            if let late = try? await TCPConnection.connect(to: address, on: loop).get() {
                try await late.close().get()
                #expect(loop.performAndWait { accepted.value.count } == 2)
            }
            #expect(stopped.result == nil)
            for connection in accepted.value { connection.close() }
            #expect(try await stopped.get() == 0)
            #expect(listener.openConnections.value == 0)
            #expect(counts.value == [1, 2, 1, 0])
            for client in clients { try await client.close().get() }
            bag.dispose()
        }
    }

    @Test("closeGracefully closes the connections still open at the deadline and says how many")
    func gracefulCloseWithConnectionsThatDoNotFinish() async throws {
        try await withCountedLoop("graceful.deadline") { loop in
            let accepted = Shared<[TCPConnection]>([])
            let listener = try TCPListener.listen(port: 0, on: loop) { connection in
                accepted.mutate { $0.append(connection) }
            }
            let finishing = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
            let lingering = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
            try await waitUntil(listener.openConnections, is: 2)
            let stopped = listener.closeGracefully(deadline: 0.05)
            accepted.value[0].close()
            #expect(try await stopped.get() == 1)
            #expect(accepted.value.allSatisfy { !$0.isOpen })
            // The client of the connection closed at the deadline sees the end of its stream.
            #expect(try await lingering.read().get() == nil)
            try await finishing.close().get()
            try await lingering.close().get()
        }
    }

    @Test("closeGracefully with a zero deadline closes the open connections at once")
    func gracefulCloseWithZeroDeadline() async throws {
        try await withCountedLoop("graceful.zero") { loop in
            let listener = try TCPListener.listen(port: 0, on: loop) { _ in }
            let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
            try await waitUntil(listener.openConnections, is: 1)
            #expect(try await listener.closeGracefully(deadline: 0).get() == 1)
            #expect(try await client.read().get() == nil)
            try await client.close().get()
        }
    }

    @Test("closeGracefully of a Unix-socket listener with no connection completes at once with 0")
    func gracefulPipeCloseWithoutConnections() async throws {
        let path = NSTemporaryDirectory() + "flow-graceful-\(getpid()).sock"
        try await withCountedLoop("graceful.pipe") { loop in
            let listener = try PipeListener.listen(path: path, on: loop) { $0.close() }
            #expect(try await listener.closeGracefully(deadline: 60).get() == 0)
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }
}

/// Waits until `signal` holds `value` (at once if it already does).
private func waitUntil(_ signal: ReadSignal<Int>, is value: Int) async throws {
    _ = try await signal.atOnce().filter { $0 == value }.future.get()
}
