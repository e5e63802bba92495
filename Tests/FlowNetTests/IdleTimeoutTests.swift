import Flow
import FlowNet
import FlowTesting
import Foundation
import Testing

/// A connected pair on a loop of its own thread, the server side taken from a ``ConnectionListener``;
/// everything is closed afterwards.
private func withTimeoutPair(
    _ body: (_ server: TCPConnection, _ client: TCPConnection) async throws -> Void
) async throws {
    let loop = EventLoop.startOnNewThread(name: "net.timeouts")
    defer { loop.shutdown() }
    let listener = try await TCPListener.listenForConnections(port: 0, on: loop)
    let client = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).get()
    var connections = listener.connections.makeAsyncIterator()
    let server = try #require(await connections.next())
    defer { _ = join(client.close(), server.close(), listener.close()) }
    try await body(server, client)
    _ = try await join(client.close(), server.close(), listener.close()).get()
}

@Suite("Read and idle timeouts")
struct IdleTimeoutTests {
    @Test func linesWithAnIdleTimeoutEndWithIdleWhenThePeerSendsNothingAndTheConnectionStaysOpen() async throws {
        try await withTimeoutPair { server, client in
            let lines = Shared<[String]>([])
            await #expect(throws: StreamTimeoutError.idle(seconds: 0.05)) {
                for try await line in server.lines(maximumLength: 100, idleTimeout: 0.05) {
                    lines.mutate { $0.append(line) }
                }
            }
            #expect(lines.value.isEmpty)
            // The timeout ended the reading, not the connection.
            try await server.writeAsync("bye\n")
            #expect(try await client.read().get() == Array("bye\n".utf8))
        }
    }

    @Test func linesThatKeepComingWithinTheIdleTimeoutAllArriveAndEndWithThePeer() async throws {
        try await withTimeoutPair { server, client in
            try await client.writeAsync("one\r\ntwo\n")
            client.shutdown()
            var lines: [String] = []
            for try await line in server.lines(idleTimeout: 3600) { lines.append(line) }
            #expect(lines == ["one", "two"])
        }
    }

    @Test func aReadThatTimesOutLosesNoBytesToTheNextRead() async throws {
        try await withTimeoutPair { server, client in
            // Timed on a virtual clock: the read's timer is armed before read(timeout:) returns.
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            let timedOut = server.read(timeout: 30)
            clock.advance(by: 30)
            await #expect(throws: StreamTimeoutError.idle(seconds: 30)) { try await timedOut.get() }
            try await client.writeAsync("late")
            #expect(try await server.read(timeout: 3600).get() == Array("late".utf8))
        }
    }

    @Test func framesAndChunksWithAnIdleTimeoutEndWithIdle() async throws {
        try await withTimeoutPair { server, client in
            // Half a frame, then nothing: the frame never completes.
            try await client.writeAsync([0, 0, 0, 4, 1, 2])
            await #expect(throws: StreamTimeoutError.idle(seconds: 0.05)) {
                for try await _ in server.frames(lengthPrefix: .uint32BigEndian, maximumLength: 16, idleTimeout: 0.05) {}
            }
            await #expect(throws: StreamTimeoutError.idle(seconds: 0.05)) {
                for try await _ in server.chunks(idleTimeout: 0.05) {}
            }
        }
    }

    @Test func theTimeoutErrorSaysWhatHappened() {
        #expect("\(StreamTimeoutError.idle(seconds: 30))" == "no bytes came for 30.0 s")
    }
}
