import Flow
import FlowNet
import FlowTesting
import Foundation
import Testing

/// The connection-wide idle timeout (`StreamConnection.idleTimeout`), as NIO's IdleStateHandler or
/// Hummingbird's idle timeout: a connection with no byte read or written for the interval is closed,
/// with a reason its reader sees. Timed on a virtual clock (`timeoutScheduler`): the tests move time by
/// hand and wait for no timer.
@Suite("Connections: the idle timeout")
struct ConnectionIdleTimeoutTests {
    @Test("a connection idle for its timeout is closed, and its lines() and later reads fail with the reason")
    func anIdleConnectionIsClosedWithItsReason() async throws {
        try await withConnectedTCPPair(loopName: "net.idle-timeout") { server, client, _ in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            #expect(server.timeoutScheduler == clock.scheduler)
            try await client.writeAsync("before the silence\n")
            server.idleTimeout = 30
            #expect(server.idleTimeout == 30)
            var lines = server.lines().makeAsyncIterator()
            #expect(try await lines.next() == "before the silence")
            clock.advance(by: 29.9)
            #expect(server.isOpen)
            clock.advance(by: 0.1)
            await #expect(throws: ConnectionIdleTimeoutError(seconds: 30)) { _ = try await lines.next() }
            #expect(!server.isOpen)
            await #expect(throws: ConnectionIdleTimeoutError(seconds: 30)) { try await server.read().get() }
            // The peer sees the close as the end of the stream.
            #expect(try await client.read().get() == nil)
        }
    }

    @Test("a byte read or written starts the idle interval again")
    func activityMovesTheIdleDeadline() async throws {
        try await withConnectedTCPPair(loopName: "net.idle-activity") { server, client, _ in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            server.idleTimeout = 10
            var lines = server.lines().makeAsyncIterator()
            clock.advance(by: 6)
            try await client.writeAsync("read at 6\n")
            #expect(try await lines.next() == "read at 6")
            // At 10 the timer finds the connection idle for 4 s only, and waits for 16.
            clock.advance(by: 6)
            #expect(server.isOpen)
            try await server.writeAsync("written at 12\n")
            clock.advance(by: 9.9)
            #expect(server.isOpen)
            clock.advance(by: 0.1)
            await #expect(throws: ConnectionIdleTimeoutError(seconds: 10)) { _ = try await lines.next() }
            #expect(!server.isOpen)
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

    @Test("a listener's connectionIdleTimeout and connectionTimeoutScheduler reach each accepted connection")
    func aListenersDefaultReachesItsConnections() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.idle-default")
        defer { loop.shutdown() }
        let clock = VirtualTimeScheduler()
        let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
        let listener = try loop.performAndWait {
            try TCPListener.listen(port: 0, on: loop) { acceptedContinuation.yield($0) }
        }
        #expect(listener.connectionIdleTimeout == nil)
        #expect(listener.connectionTimeoutScheduler == nil)
        listener.connectionIdleTimeout = 5
        listener.connectionTimeoutScheduler = clock.scheduler
        let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
        var iterator = accepted.makeAsyncIterator()
        let server = try #require(await iterator.next())
        #expect(server.idleTimeout == 5)
        #expect(server.timeoutScheduler == clock.scheduler)
        let read = server.read()
        clock.advance(by: 5)
        await #expect(throws: ConnectionIdleTimeoutError(seconds: 5)) { try await read.get() }
        #expect(try await client.read().get() == nil)
        _ = try await join(client.close(), listener.close()).get()
    }

    @Test("a listener group's connectionIdleTimeout and connectionTimeoutScheduler reach the connections of every loop")
    func aListenerGroupsDefaultReachesItsConnections() async throws {
        let loops = (0..<2).map { EventLoop.startOnNewThread(name: "net.idle-group-\($0)") }
        defer { for loop in loops { loop.shutdown() } }
        let clock = VirtualTimeScheduler()
        let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
        let group = try TCPListenerGroup.listen(port: 0, loops: loops) { acceptedContinuation.yield($0) }
        #expect(group.connectionIdleTimeout == nil)
        #expect(group.connectionTimeoutScheduler == nil)
        group.connectionIdleTimeout = 5
        group.connectionTimeoutScheduler = clock.scheduler
        #expect(group.connectionIdleTimeout == 5)
        #expect(group.connectionTimeoutScheduler == clock.scheduler)
        // Whichever loop the kernel hands a connection to, its listener has the group's settings.
        for listener in group.listeners {
            #expect(listener.connectionIdleTimeout == 5)
            #expect(listener.connectionTimeoutScheduler == clock.scheduler)
        }
        let client = try await TCPConnection.connect(to: group.localAddress, on: loops[0]).get()
        var iterator = accepted.makeAsyncIterator()
        let server = try #require(await iterator.next())
        #expect(server.idleTimeout == 5)
        #expect(server.timeoutScheduler == clock.scheduler)
        let read = server.read()
        await clock.waitUntilPending()   // the idle timer, armed as the connection was accepted
        clock.advance(by: 4.9)
        #expect(server.isOpen)
        clock.advance(by: 0.1)
        await #expect(throws: ConnectionIdleTimeoutError(seconds: 5)) { try await read.get() }
        #expect(try await client.read().get() == nil)
        group.connectionIdleTimeout = nil
        group.connectionTimeoutScheduler = nil
        for listener in group.listeners {
            #expect(listener.connectionIdleTimeout == nil)
            #expect(listener.connectionTimeoutScheduler == nil)
        }
        _ = try await join(client.close(), group.close()).get()
    }

    @Test("ConnectionIdleTimeoutError says what happened")
    func theErrorSaysWhatHappened() {
        #expect("\(ConnectionIdleTimeoutError(seconds: 30))" == "closed after 30.0 s with no byte read or written")
    }
}

/// The read deadline (`StreamConnection.setReadDeadline(in:)`), a request timeout that bytes trickling
/// in do not move, on a virtual clock.
@Suite("Connections: the read deadline")
struct ConnectionReadDeadlineTests {
    @Test("a read deadline ends reading at its time however bytes trickle in, and leaves the connection open to answer")
    func theDeadlineEndsReadingButNotTheConnection() async throws {
        try await withConnectedTCPPair(loopName: "net.read-deadline") { server, client, _ in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            server.setReadDeadline(in: 10)
            for second in [3, 6, 9] {
                clock.advance(by: 3)
                try await client.writeAsync("\(second)")
                #expect(try await server.read().get() == Array("\(second)".utf8))
            }
            let waiting = server.read()
            clock.advance(by: 0.9)
            #expect(server.isOpen)
            clock.advance(by: 0.1)
            await #expect(throws: StreamConnection.readDeadlineError) { try await waiting.get() }
            await #expect(throws: StreamConnection.readDeadlineError) { try await server.read().get() }
            // Still open for the answer.
            #expect(server.isOpen)
            try await server.writeAsync("too slow\n")
            #expect(try await client.read().get() == Array("too slow\n".utf8))
        }
    }

    @Test("a deadline moved later, or removed, does not end reading at the time first set")
    func aMovedOrRemovedDeadlineDoesNotEndReading() async throws {
        try await withConnectedTCPPair(loopName: "net.read-deadline-moved") { server, client, _ in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            server.setReadDeadline(in: 10)
            clock.advance(by: 5)
            server.setReadDeadline(in: 10)   // now at 15
            clock.advance(by: 9.9)
            try await client.writeAsync("at 14.9")
            #expect(try await server.read().get() == Array("at 14.9".utf8))
            server.setReadDeadline(in: nil)
            clock.advance(by: 3600)
            try await client.writeAsync("an hour later")
            #expect(try await server.read().get() == Array("an hour later".utf8))
            // A deadline moved earlier than the one armed counts from when it was set.
            server.setReadDeadline(in: 100)
            server.setReadDeadline(in: 1)
            let waiting = server.read()
            clock.advance(by: 1)
            await #expect(throws: StreamConnection.readDeadlineError) { try await waiting.get() }
        }
    }

    @Test("a deadline that passed before anyone read fails the first read, and a read handler is told .failed")
    func aDeadlinePassedBeforeReadingFailsTheReaders() async throws {
        try await withConnectedTCPPair(loopName: "net.read-deadline-early") { server, client, _ in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            server.setReadDeadline(in: 2)
            clock.advance(by: 2)
            #expect(server.isOpen)
            await #expect(throws: StreamConnection.readDeadlineError) { try await server.read().get() }
        }
        try await withConnectedTCPPair(loopName: "net.read-deadline-handler") { server, client, _ in
            let clock = VirtualTimeScheduler()
            server.timeoutScheduler = clock.scheduler
            let (events, continuation) = AsyncStream.makeStream(of: String.self)
            server.onRead { event in
                switch event {
                case .bytes(let bytes): continuation.yield(String(decoding: bytes, as: UTF8.self))
                case .endOfStream: continuation.yield("end")
                case .failed(let error): continuation.yield("failed: \(error)")
                }
            }
            var iterator = events.makeAsyncIterator()
            server.setReadDeadline(in: 2)
            try await client.writeAsync("hello")
            #expect(await iterator.next() == "hello")
            clock.advance(by: 2)
            #expect(await iterator.next() == "failed: \(StreamConnection.readDeadlineError)")
            #expect(server.isOpen)
        }
    }
}
