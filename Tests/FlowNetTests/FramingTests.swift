import Flow
@testable import FlowNet
import Foundation
import Testing

/// A connected pair of TCP connections on a loop of their own thread: `server` is the accepted side.
/// Closes both and the listener afterwards, and checks that no socket on the port is left open.
private func withConnectedPair(
    _ body: (_ server: StreamConnection, _ client: StreamConnection, _ loop: EventLoop) async throws -> Void
) async throws {
    let loop = EventLoop.startOnNewThread(name: "net.framing")
    defer { loop.shutdown() }
    let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
    let listener = try loop.scheduler.sync {
        try TCPListener.listen(port: 0, on: loop) { acceptedContinuation.yield($0) }
    }
    let port = listener.port
    let client = try await TCPConnection.connect(host: "127.0.0.1", port: port, on: loop).get()
    var iterator = accepted.makeAsyncIterator()
    let server = try #require(await iterator.next())
    do {
        try await body(server, client, loop)
    } catch {
        _ = try? await join(client.close(), server.close(), listener.close()).get()
        throw error
    }
    let sockets = SocketsBound(at: listener.localAddress, .tcp)
    _ = try await join(client.close(), server.close(), listener.close()).get()
    sockets.expectAllClosed()
}

/// Writes `bytes` one at a time, each once the last is with the kernel: a slow peer.
private func trickle(_ bytes: [UInt8], to connection: StreamConnection) async throws {
    for byte in bytes {
        try await connection.write([byte]).get()
    }
}

private func collect<S: AsyncSequence>(_ sequence: S) async throws -> [S.Element] {
    var elements: [S.Element] = []
    for try await element in sequence { elements.append(element) }
    return elements
}

/// The events of a finite signal until its end.
private func events<Value: Sendable>(of signal: FiniteSignal<Value>) async -> ([Value], Error?) {
    let values = Shared<[Value]>([])
    let bag = DisposeBag()
    let error: Error? = await withCheckedContinuation { continuation in
        bag += signal.onEvent(on: .none) { event in
            switch event {
            case .value(let value): values.mutate { $0.append(value) }
            case .end(let error): continuation.resume(returning: error)
            }
        }
    }
    bag.dispose()
    return (values.value, error)
}

@Suite("Framing: lines and length-prefixed frames")
struct FramingTests {
    @Test("lines end at \\n and at \\r\\n, without their ending; bytes after the last ending make a last line")
    func linesEndAtNewlineAndCarriageReturnNewline() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write("one\ntwo\r\nthree\r\n\n\r\nlast")
            client.shutdown()
            let lines = try await collect(server.lines(maximumLength: 16))
            #expect(lines == ["one", "two", "three", "", "", "last"])
        }
    }

    @Test("a peer trickling one byte at a time gives the same lines, a UTF-8 character split across reads included")
    func slowPeerGivesTheSameLines() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            // "12345678\r\n" is exactly the maximum: its `\r` alone must not fail it.
            let text = "héllo wörld\r\n12345678\r\nbye\n"
            async let lines = collect(server.lines(maximumLength: 13))
            try await trickle(Array(text.utf8), to: client)
            client.shutdown()
            #expect(try await lines == ["héllo wörld", "12345678", "bye"])
        }
    }

    @Test("a line longer than the maximum fails the sequence once the limit is passed, without waiting for its end")
    func hostileLineFailsAsSoonAsTheLimitIsPassed() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write("ok\r\n" + String(repeating: "x", count: 100))   // and never a newline nor an end
            var received: [String] = []
            await #expect(throws: FramingError.lineTooLong(maximumLength: 16)) {
                for try await line in server.lines(maximumLength: 16) { received.append(line) }
            }
            #expect(received == ["ok"])
        }
    }

    @Test("a complete line longer than the maximum fails too, the \\r of a maximum line being allowed only before \\n")
    func completeLongLineFails() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write("1234\r\n12345\r\n")
            client.shutdown()
            var received: [String] = []
            await #expect(throws: FramingError.lineTooLong(maximumLength: 4)) {
                for try await line in server.lines(maximumLength: 4) { received.append(line) }
            }
            #expect(received == ["1234"])
        }
    }

    @Test("a consumer that stops taking lines stops the socket's reads")
    func consumerThatStopsStopsTheReads() async throws {
        try await withConnectedPair { (server, client, loop) async throws in
            client.write("first\nsecond\n")
            var iterator = server.lines().makeAsyncIterator()
            #expect(try await iterator.next() == "first")
            // No read is waiting: libuv is not reading the socket, so the peer's bytes stay in the kernel.
            #expect(loop.scheduler.sync { server.isReading } == false)
            #expect(try await iterator.next() == "second")
            #expect(loop.scheduler.sync { server.isReading } == false)
        }
    }

    @Test("lines are read from a Unix domain socket the same way")
    func linesOverAUnixSocket() async throws {
        let folder = try makeTemporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/lines.sock"
        let loop = EventLoop.startOnNewThread(name: "net.framing-pipe")
        defer { loop.shutdown() }
        let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: PipeConnection.self)
        let listener = try loop.scheduler.sync {
            try PipeListener.listen(path: path, on: loop) { acceptedContinuation.yield($0) }
        }
        let client = try await PipeConnection.connect(toPath: path, on: loop).get()
        var iterator = accepted.makeAsyncIterator()
        let server = try #require(await iterator.next())
        client.write("a\r\nb\n")
        client.shutdown()
        #expect(try await collect(server.lines()) == ["a", "b"])
        _ = try await join(client.close(), server.close(), listener.close()).get()
        #expect(!openDescriptorTargets().contains(path))
    }

    @Test("frames come back as written, for each prefix, trickled one byte at a time, empty frames included")
    func framesRoundTrip() async throws {
        for prefix in [LengthPrefix.uint8, .uint16LittleEndian, .uint32BigEndian, .uint64BigEndian] {
            try await withConnectedPair { (server, client, _) async throws in
                let frames: [[UInt8]] = [Array("hello".utf8), [], Array(repeating: 7, count: 200)]
                async let received = collect(server.frames(lengthPrefix: prefix, maximumLength: 200))
                var bytes: [UInt8] = []
                for frame in frames { bytes += prefix.encode(frame.count) + frame }
                try await trickle(bytes, to: client)
                client.shutdown()
                #expect(try await received == frames)
            }
        }
    }

    @Test("writeFrame writes the prefix the reader expects, and refuses a frame its prefix cannot hold")
    func writeFrameWritesThePrefix() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.writeFrame(Array("abc".utf8), lengthPrefix: .uint32BigEndian)
            await #expect(throws: FramingError.frameTooLong(length: 256, maximumLength: 255)) {
                try await client.writeFrame(Array(repeating: 0, count: 256), lengthPrefix: .uint8).get()
            }
            client.shutdown()
            #expect(try await collect(server.chunks).flatMap { $0 } == [0, 0, 0, 3] + Array("abc".utf8))
        }
    }

    @Test("a length prefix larger than the maximum fails before any of the frame is read")
    func hostileLengthPrefixFails() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write([0x7f, 0xff, 0xff, 0xff])   // 2 GiB announced, none sent, no end
            await #expect(throws: FramingError.frameTooLong(length: 0x7fff_ffff, maximumLength: 1024)) {
                for try await _ in server.frames(lengthPrefix: .uint32BigEndian, maximumLength: 1024) {}
            }
        }
    }

    @Test("the peer closing inside a frame fails the sequence: no shorter frame")
    func endOfStreamInsideAFrameFails() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write([0, 3, 0x61, 0x62, 0x63, 0, 5, 0x61])   // "abc", then 1 byte of 5
            client.shutdown()
            var received: [[UInt8]] = []
            await #expect(throws: FramingError.endOfStreamInsideFrame(receivedBytes: 3)) {
                for try await frame in server.frames(lengthPrefix: .uint16BigEndian, maximumLength: 10) {
                    received.append(frame)
                }
            }
            #expect(received == [Array("abc".utf8)])
        }
    }

    @Test("the peer closing inside a length prefix fails the sequence")
    func endOfStreamInsideAPrefixFails() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write([0, 1, 0x61, 0])
            client.shutdown()
            var received: [[UInt8]] = []
            await #expect(throws: FramingError.endOfStreamInsideFrame(receivedBytes: 1)) {
                for try await frame in server.frames(lengthPrefix: .uint16BigEndian, maximumLength: 10) {
                    received.append(frame)
                }
            }
            #expect(received == [[0x61]])
        }
    }

    @Test("the line signal gives each line, then the end")
    func lineSignalGivesLinesThenTheEnd() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write("one\r\ntwo\nthree")
            client.shutdown()
            let (lines, error) = await events(of: server.lineSignal())
            #expect(lines == ["one", "two", "three"])
            #expect(error == nil)
        }
    }

    @Test("the line signal ends with the error of a line longer than the maximum")
    func lineSignalEndsWithTheError() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write("ok\n" + String(repeating: "x", count: 50))
            let (lines, error) = await events(of: server.lineSignal(maximumLength: 8))
            #expect(lines == ["ok"])
            #expect(error as? FramingError == .lineTooLong(maximumLength: 8))
        }
    }

    @Test("the frame signal gives each frame, then ends with the error of a frame cut short")
    func frameSignalEndsWithTheError() async throws {
        try await withConnectedPair { (server, client, _) async throws in
            client.write([2, 0x61, 0x62, 9, 0x61])
            client.shutdown()
            let (frames, error) = await events(of: server.frameSignal(lengthPrefix: .uint8, maximumLength: 16))
            #expect(frames == [[0x61, 0x62]])
            #expect(error as? FramingError == .endOfStreamInsideFrame(receivedBytes: 2))
        }
    }

    @Test("a listener that stops listening stops the socket's reads")
    func signalListenerThatStopsStopsTheReads() async throws {
        try await withConnectedPair { (server, client, loop) async throws in
            client.write("first\n")
            let bag = DisposeBag()
            // Listened to from a job on the loop, so that the disposable is in the bag before the
            // line arrives: from the test's thread, the line (already sent) could be delivered, and
            // the bag disposed, before `bag +=` had added the disposable.
            let first: String = await withCheckedContinuation { continuation in
                loop.execute {
                    bag += server.lineSignal().onValue(on: .none) { line in
                        bag.dispose()
                        continuation.resume(returning: line)
                    }
                }
            }
            #expect(first == "first")
            #expect(loop.scheduler.sync { server.isReading } == false)
        }
    }
}
