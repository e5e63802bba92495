import Dispatch
import Flow
import FlowNet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every FlowNet entry point that opens or uses a handle, called from its loop, from another loop's
/// work, from a Dispatch queue and from a detached task (Docs/AnyThread.md). Each test counts the
/// loop's libuv handles, and the sockets bound to its port, once everything is closed.
@Suite("FlowNet entry points from any thread")
struct AnyThreadEntryPointTests {
    @Test("TCPListener.listen(host:) listens, accepts and closes from every caller, leaving no socket or handle",
          arguments: EntryPointCaller.allCases)
    func tcpListenerFromEveryCaller(_ caller: EntryPointCaller) async throws {
        try await withCountedLoop("anyThread.tcpListen") { loop in
            let accepted = Shared(0)
            let listener = try await caller.call(for: loop) {
                try TCPListener.listen(host: "localhost", port: 0, on: loop) { connection in
                    accepted.mutate { $0 += 1 }
                    connection.close()
                }
            }
            let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
            #expect(try await client.read().get() == nil)
            try await client.close().get()
            let sockets = SocketsBound(at: listener.localAddress, .tcp)
            let closed = try await caller.call(for: loop) { listener.close() }
            try await closed.get()
            #expect(accepted.value == 1)
            sockets.expectAllClosed()
        }
    }

    @Test("a TCP connection's reads, writes, options and addresses work from every caller",
          arguments: EntryPointCaller.allCases)
    func tcpConnectionFromEveryCaller(_ caller: EntryPointCaller) async throws {
        try await withCountedLoop("anyThread.tcpConnection") { loop in
            let listener = try TCPListener.listen(port: 0, on: loop) { connection in
                connection.onRead { event in
                    if case .bytes(let bytes) = event { connection.send(copying: bytes) } else { connection.close() }
                }
            }
            let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
            let (echoes, echo) = AsyncStream<[UInt8]>.makeStream()
            let facts = try await caller.call(for: loop) {
                client.writeBufferLimit = 1024
                client.pauseReading()
                client.onRead { event in
                    if case .bytes(let bytes) = event { echo.yield(Array(bytes)) }
                }
                client.resumeReading()
                client.send(SharedBytes("ping"))
                return (client.isOpen, client.localAddress, client.remoteAddress, client.writeBufferLimit,
                        client.queuedWriteBytes >= 0, client.isWritable)
            }
            var received: [UInt8] = []
            for await chunk in echoes {
                received += chunk
                if received.count >= 4 { break }
            }
            #expect(received == Array("ping".utf8))
            #expect(facts.0)
            #expect(facts.1 != nil)
            #expect(facts.2 == listener.localAddress)
            #expect(facts.3 == 1024)
            #expect(facts.4 && facts.5)
            let sockets = SocketsBound(at: listener.localAddress, .tcp)
            try await caller.call(for: loop) { client.close() }.get()
            try await listener.close().get()
            sockets.expectAllClosed()
        }
    }

    @Test("UDPSocket.bind, onReceive, send, options and close work from every caller, leaving no socket or handle",
          arguments: EntryPointCaller.allCases)
    func udpSocketFromEveryCaller(_ caller: EntryPointCaller) async throws {
        try await withCountedLoop("anyThread.udp") { loop in
            let (datagrams, delivery) = AsyncStream<Datagram>.makeStream()
            let socket = try await caller.call(for: loop) {
                let socket = try UDPSocket.bind(host: "localhost", port: 0, on: loop)
                socket.onReceive { delivery.yield($0) }
                socket.onReceiveError { _ in }
                try socket.setBroadcast(false)
                try socket.setMulticastLoopback(true)
                try socket.connect(to: socket.localAddress)
                #expect(socket.remoteAddress == socket.localAddress)
                #expect(socket.failedReceiveCount == 0)
                return socket
            }
            try await caller.call(for: loop) { socket.send(Array("ping".utf8)) }.get()
            var iterator = datagrams.makeAsyncIterator()
            #expect(await iterator.next()?.bytes == Array("ping".utf8))
            let sockets = SocketsBound(at: socket.localAddress, .udp)
            try await caller.call(for: loop) { socket.close() }.get()
            sockets.expectAllClosed()
        }
    }

    @Test("PipeListener.listen and PipeConnection.open work from every caller, leaving no handle",
          arguments: EntryPointCaller.allCases)
    func pipesFromEveryCaller(_ caller: EntryPointCaller) async throws {
        let path = FileManager.default.temporaryDirectory.path + "/flow-any-\(UUID().uuidString.prefix(8)).sock"
        try await withCountedLoop("anyThread.pipe") { loop in
            let accepted = Shared(0)
            let listener = try await caller.call(for: loop) {
                try PipeListener.listen(path: path, on: loop) { connection in
                    accepted.mutate { $0 += 1 }
                    connection.close()
                }
            }
            let client = try await PipeConnection.connect(toPath: path, on: loop).get()
            #expect(try await client.read().get() == nil)
            try await client.close().get()
            #expect(listener.failedAcceptCount == 0)
            try await caller.call(for: loop) { listener.close() }.get()
            #expect(accepted.value == 1)
            #expect(!FileManager.default.fileExists(atPath: path))

            var ends: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
            let descriptor = ends[0]
            let connection = try await caller.call(for: loop) { try PipeConnection.open(fileDescriptor: descriptor, on: loop) }
            #expect(write(ends[1], "hi", 2) == 2)
            #expect(try await connection.read().get() == Array("hi".utf8))
            try await caller.call(for: loop) { connection.close() }.get()
            // The connection closed its end: the other end reads the end of the stream.
            var byte: UInt8 = 0
            #expect(read(ends[1], &byte, 1) == 0)
            close(ends[1])
        }
    }

    @Test("LoopBoundBox and LoopBound can be made from every caller; the value is then used on the loop",
          arguments: EntryPointCaller.allCases)
    func loopBoundFromEveryCaller(_ caller: EntryPointCaller) async throws {
        let loop = EventLoop.startOnNewThread(name: "anyThread.loopBound")
        defer { loop.shutdown() }
        let (box, bound) = try await caller.call(for: loop) {
            (LoopBoundBox([1], loop: loop), LoopBound([2], loop: loop))
        }
        let values = loop.performAndWait {
            box.value.append(3)
            return box.value + bound.value
        }
        #expect(values == [1, 3, 2])
    }

    @Test("the async forms work from a detached task and from a task on the loop, leaving no socket or handle")
    func asyncFormsFromTasks() async throws {
        try await withCountedLoop("anyThread.async") { loop in
            for onTheLoop in [false, true] {
                let opened: @Sendable () async throws -> (TCPListener, UDPSocket, TCPListener) = {
                    let listener = try await TCPListener.listenAsync(host: "localhost", port: 0, on: loop) { $0.close() }
                    let socket = try await UDPSocket.bindAsync(host: "localhost", port: 0, on: loop)
                    let second = try await TCPListener.listenAsync(
                        at: SocketAddress(host: "127.0.0.1", port: 0), on: loop) { $0.close() }
                    return (listener, socket, second)
                }
                let (listener, socket, second) = onTheLoop
                    ? try await Task(executorPreference: loop) { try await opened() }.value
                    : try await Task.detached { try await opened() }.value
                let sockets = [
                    SocketsBound(at: listener.localAddress, .tcp), SocketsBound(at: socket.localAddress, .udp),
                    SocketsBound(at: second.localAddress, .tcp),
                ]
                let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
                #expect(try await client.read().get() == nil)
                try await client.close().get()
                try await listener.close().get()
                try await socket.close().get()
                try await second.close().get()
                for noted in sockets { noted.expectAllClosed() }
            }
        }
    }

    @Test("the async forms throw the synchronous forms' errors")
    func asyncFormsThrowTheSameErrors() async throws {
        try await withCountedLoop("anyThread.asyncErrors") { loop in
            let taken = try await UDPSocket.bindAsync(on: loop)
            let inUse = await #expect(throws: EventLoopError.self) {
                _ = try await UDPSocket.bindAsync(to: taken.localAddress, on: loop)
            }
            #expect("\(inUse.map { "\($0)" } ?? "")".hasPrefix("EADDRINUSE"))
            await #expect(throws: EventLoopError.self) {
                _ = try await TCPListener.listenAsync(host: "no-such-host.invalid", port: 0, on: loop) { _ in }
            }
            await #expect(throws: EventLoopError.self) {
                _ = try await PipeListener.listenAsync(path: "", on: loop) { _ in }
            }
            try await taken.close().get()
        }
    }

    @Test("EventLoop.perform and performAndWait run Flow code on the chosen loop, with it as the current scheduler")
    func performRunsOnTheChosenLoop() async throws {
        let loop = EventLoop.startOnNewThread(name: "anyThread.perform")
        defer { loop.shutdown() }
        let fromTask = await Task.detached {
            await loop.perform { (loop.isInLoopContext, Scheduler.current == loop.scheduler) }
        }.value
        #expect(fromTask == (true, true))
        let fromQueue = try await EntryPointCaller.aDispatchQueue.call(for: loop) {
            loop.performAndWait { (loop.isInLoopContext, Scheduler.current == loop.scheduler) }
        }
        #expect(fromQueue == (true, true))
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await loop.perform { () throws(Refused) in throw Refused() }
        }
        #expect(throws: Refused.self) {
            try loop.performAndWait { () throws(Refused) in throw Refused() }
        }
    }
}
