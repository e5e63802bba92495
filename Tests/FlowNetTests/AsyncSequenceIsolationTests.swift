import Dispatch
import Flow
@testable import FlowNet
import Foundation
import Synchronization
import Testing

/// A serial executor that counts the jobs it runs: each is the task coming back to the actor.
private final class CountingExecutor: SerialExecutor {
    private let queue = DispatchQueue(label: "test.counting-executor")
    private let jobCount = Atomic<Int>(0)

    var jobs: Int { jobCount.load(ordering: .relaxed) }

    func enqueue(_ job: consuming ExecutorJob) {
        jobCount.add(1, ordering: .relaxed)
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }
}

/// An actor on a ``CountingExecutor`` that counts a sequence's elements in a `for try await` loop.
private actor ElementCounter {
    let executor = CountingExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    func count<Elements: AsyncSequence & Sendable>(_ elements: Elements) async throws -> Int {
        var count = 0
        for try await _ in elements { count += 1 }
        return count
    }
}

/// An actor on a ``CountingExecutor`` that takes connections from a listener's sequence.
private actor ConnectionTaker {
    let executor = CountingExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Takes `count` connections in a `for await` loop and closes them; returns how many it took.
    func take(_ count: Int, from connections: IncomingConnections<TCPConnection>) async -> Int {
        var taken = 0
        for await connection in connections {
            connection.close()
            taken += 1
            if taken == count { break }
        }
        return taken
    }
}

/// A connected pair on a loop of its own thread; closes both and the listener afterwards.
private func withConnectedPair(_ body: (_ server: TCPConnection, _ client: TCPConnection) async throws -> Void) async throws {
    let loop = EventLoop.startOnNewThread(name: "net.isolation")
    defer { loop.shutdown() }
    let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
    let listener = try loop.performAndWait {
        try TCPListener.listen(port: 0, on: loop) { acceptedContinuation.yield($0) }
    }
    let client = try await TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).get()
    var connections = accepted.makeAsyncIterator()
    let server = try #require(await connections.next())
    let sockets = SocketsBound(at: listener.localAddress, .tcp)
    do {
        try await body(server, client)
    } catch {
        _ = try? await join(client.close(), server.close(), listener.close()).get()
        throw error
    }
    _ = try await join(client.close(), server.close(), listener.close()).get()
    sockets.expectAllClosed()
}

/// Issue #38: the library's async sequences implement `next(isolation:)`, so a `for try await` loop in
/// an actor (the main actor included) waits on the actor's own executor instead of leaving it and
/// coming back for each element. Counted on an actor whose executor counts its jobs: with only
/// `next()`, each element was one job at least.
@Suite("Async sequences stay on their consumer's actor")
struct AsyncSequenceIsolationTests {
    static let elementCount = 2_000

    @Test("2,000 lines read in an actor come back to its executor a few times, not once per line")
    func linesStayOnTheConsumersActor() async throws {
        try await withConnectedPair { server, client in
            let counter = ElementCounter()
            async let count = counter.count(server.lines())
            try await client.write(String(repeating: "a line\n", count: Self.elementCount)).get()
            _ = client.shutdown()
            #expect(try await count == Self.elementCount)
            #expect(counter.executor.jobs < Self.elementCount / 10, "\(counter.executor.jobs) jobs")
        }
    }

    @Test("2,000 lines read with an idle timeout in an actor come back to its executor a few times, not once per line")
    func timedLinesStayOnTheConsumersActor() async throws {
        try await withConnectedPair { server, client in
            let counter = ElementCounter()
            async let count = counter.count(server.lines(idleTimeout: 30))
            try await client.write(String(repeating: "a line\n", count: Self.elementCount)).get()
            _ = client.shutdown()
            #expect(try await count == Self.elementCount)
            #expect(counter.executor.jobs < Self.elementCount / 10, "\(counter.executor.jobs) jobs")
        }
    }

    @Test("40 connections already accepted, taken in an actor, come back to its executor a few times, not once each")
    func connectionsStayOnTheConsumersActor() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.isolation.connections")
        defer { loop.shutdown() }
        let server = try await TCPListener.listenForConnections(port: 0, on: loop)
        let count = 40
        var clients: [TCPConnection] = []
        for _ in 0..<count {
            clients.append(try await TCPConnection.connect(host: "127.0.0.1", port: server.port, on: loop).get())
        }
        // Every connection accepted and waiting in the sequence (the last perhaps just being handed over).
        _ = try await server.openConnections.atOnce().filter { $0 == count }.future.get()
        let taker = ConnectionTaker()
        #expect(await taker.take(count, from: server.connections) == count)
        #expect(taker.executor.jobs < count / 4, "\(taker.executor.jobs) jobs")
        for client in clients { _ = try await client.close().get() }
        _ = try await server.close().get()
    }

    @Test("2,000 length-prefixed frames read in an actor come back to its executor a few times, not once per frame")
    func framesStayOnTheConsumersActor() async throws {
        try await withConnectedPair { server, client in
            let counter = ElementCounter()
            async let count = counter.count(server.frames(lengthPrefix: .uint16BigEndian, maximumLength: 64))
            let frame = LengthPrefix.uint16BigEndian.encode(5) + Array("frame".utf8)
            try await client.write(Array([[UInt8]](repeating: frame, count: Self.elementCount).joined())).get()
            _ = client.shutdown()
            #expect(try await count == Self.elementCount)
            #expect(counter.executor.jobs < Self.elementCount / 10, "\(counter.executor.jobs) jobs")
        }
    }
}
