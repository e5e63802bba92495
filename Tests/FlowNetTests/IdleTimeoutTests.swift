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
    @Test(.timeLimit(.minutes(1)))
    func linesWithAnIdleTimeoutEndWithIdleWhenThePeerSendsNothingAndTheConnectionStaysOpen() async throws {
        try await withTimeoutPair { server, client in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            let lines = Shared<[String]>([])
            let reading = Task {
                for try await line in server.lines(maximumLength: 100, idleTimeout: 30) {
                    lines.mutate { $0.append(line) }
                }
            }
            try await Self.expectIdleTimeout(of: reading, after: 30, on: clock)
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

    @Test(.timeLimit(.minutes(1)))
    func framesAndChunksWithAnIdleTimeoutEndWithIdle() async throws {
        try await withTimeoutPair { server, _ in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            let frames = Task {
                for try await _ in server.frames(lengthPrefix: .uint32BigEndian, maximumLength: 16, idleTimeout: 30) {}
            }
            try await Self.expectIdleTimeout(of: frames, after: 30, on: clock)
            let chunks = Task {
                for try await _ in server.chunks(idleTimeout: 30) {}
            }
            try await Self.expectIdleTimeout(of: chunks, after: 30, on: clock)
        }
    }

    /// Waits for `reading`'s step to arm its timer on `clock`, checks that the timer is due `seconds`
    /// from now and that time short of it ends nothing, then moves the clock to it and expects
    /// `reading` to end with ``StreamTimeoutError/idle(seconds:)``. A sequence that arms no timer never
    /// gets past the wait (the test's time limit fails it); one that times out early fails the checks.
    private static func expectIdleTimeout(
        of reading: Task<Void, any Error>, after seconds: Double, on clock: VirtualTimeScheduler
    ) async throws {
        await clock.waitUntilPending()
        let armedAt = clock.now
        #expect(clock.pendingCount == 1)
        #expect(clock.nextDueTime == armedAt + .seconds(seconds))
        clock.advance(by: seconds - 0.001)
        #expect(clock.pendingCount == 1, "the step's timer fired before its idle timeout")
        clock.advance(by: 0.001)
        #expect(clock.pendingCount == 0)
        await #expect(throws: StreamTimeoutError.idle(seconds: seconds)) { try await reading.value }
    }

    @Test func theTimeoutErrorSaysWhatHappened() {
        #expect("\(StreamTimeoutError.idle(seconds: 30))" == "no bytes came for 30.0 s")
    }
}
