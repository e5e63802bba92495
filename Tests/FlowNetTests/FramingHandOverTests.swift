import Flow
@testable import FlowNet
import Foundation
import Testing

private func collect<S: AsyncSequence>(_ sequence: S) async throws -> [S.Element] {
    var elements: [S.Element] = []
    for try await element in sequence { elements.append(element) }
    return elements
}

/// A greeting line, then two frames of a 16-bit big-endian prefix, written as one chunk.
private let greetingAndTwoFrames: [UInt8] = Array("HELLO 1\r\n".utf8) + [0, 2, 0x61, 0x62] + [0, 1, 0x63]

/// A connection read by one framed reader after another: what the first took from the socket and did
/// not hand out goes to the next (issue #39, item 6), and a peer's length prefix cannot overflow the
/// frame reader (item 3).
@Suite("Framing: readers taking over a connection, hostile length prefixes")
struct FramingHandOverTests {
    @Test("frames() after lines() gets the frames that came in the greeting line's chunk")
    func framesAfterLines() async throws {
        try await withConnectedTCPPair(loopName: "net.handover") { server, client, _ in
            try await client.write(greetingAndTwoFrames).get()
            client.shutdown()
            var lines = server.lines().makeAsyncIterator()
            #expect(try await lines.next() == "HELLO 1")
            let frames = try await collect(server.frames(lengthPrefix: .uint16BigEndian, maximumLength: 16))
            #expect(frames == [[0x61, 0x62], [0x63]])
        }
    }

    @Test("read() after lines() gets the bytes after the line first, then the next chunks")
    func readAfterLines() async throws {
        try await withConnectedTCPPair(loopName: "net.handover") { server, client, _ in
            try await client.write(Array("one\ntwo\nthr".utf8)).get()
            var lines = server.lines().makeAsyncIterator()
            #expect(try await lines.next() == "one")
            #expect(try await server.read().get() == Array("two\nthr".utf8))
            try await client.write(Array("ee\n".utf8)).get()
            client.shutdown()
            #expect(try await collect(server.lines()) == ["ee"])
        }
    }

    @Test("a line split across the hand-over from lines(idleTimeout:) to lines() and back is neither lost nor doubled")
    func timedAndUntimedLinesHandOver() async throws {
        try await withConnectedTCPPair(loopName: "net.handover") { server, client, _ in
            try await client.write(Array("one\ntw".utf8)).get()
            var timed = server.lines(idleTimeout: 3600).makeAsyncIterator()
            #expect(try await timed.next() == "one")
            // "tw" came in the chunk of "one": the plain sequence that takes over gets it first.
            var plain = server.lines().makeAsyncIterator()
            try await client.write(Array("o\nthr".utf8)).get()
            #expect(try await plain.next() == "two")
            // And back: "thr", read by the plain sequence with "two", goes to the timed one after it.
            try await client.write(Array("ee\nfour\n".utf8)).get()
            client.shutdown()
            #expect(try await collect(server.lines(maximumLength: 100, idleTimeout: 3600)) == ["three", "four"])
        }
    }

    @Test("the start of a line lines(idleTimeout:) held when it timed out goes to the reader that takes over")
    func partialLineAfterIdleTimeout() async throws {
        try await withConnectedTCPPair(loopName: "net.handover") { server, client, _ in
            try await client.write(Array("one\ntw".utf8)).get()
            var timed = server.lines(idleTimeout: 0.05).makeAsyncIterator()
            #expect(try await timed.next() == "one")
            await #expect(throws: StreamTimeoutError.idle(seconds: 0.05)) { _ = try await timed.next() }
            try await client.write(Array("o\n".utf8)).get()
            client.shutdown()
            #expect(try await collect(server.lines()) == ["two"])
        }
    }

    @Test("a line signal's listener that stops after the greeting leaves the frames to frames()")
    func framesAfterLineSignal() async throws {
        try await withConnectedTCPPair(loopName: "net.handover") { server, client, loop in
            try await client.write(greetingAndTwoFrames).get()
            client.shutdown()
            let bag = DisposeBag()
            // Listened to from the loop, so that the listener is in the bag before the line arrives.
            let greeting: String = await withCheckedContinuation { continuation in
                loop.execute {
                    bag += server.lineSignal().onValue(on: .none) { line in
                        bag.dispose()
                        continuation.resume(returning: line)
                    }
                }
            }
            #expect(greeting == "HELLO 1")
            let frames = try await collect(server.frames(lengthPrefix: .uint16BigEndian, maximumLength: 16))
            #expect(frames == [[0x61, 0x62], [0x63]])
        }
    }

    @Test("frames read one at a time by separate sequences come in order, none lost")
    func framesBySeparateSequences() async throws {
        try await withConnectedTCPPair(loopName: "net.handover") { server, client, _ in
            var bytes: [UInt8] = []
            for index in 0..<50 { bytes += [UInt8(1), UInt8(index)] }
            try await client.write(bytes).get()
            client.shutdown()
            var received: [UInt8] = []
            for _ in 0..<50 {
                var frames = server.frames(lengthPrefix: .uint8, maximumLength: 4).makeAsyncIterator()
                received += try #require(try await frames.next())
            }
            #expect(received == Array(0..<50))
            #expect(try await server.read().get() == nil)
        }
    }

    @Test("a 64-bit prefix announcing Int.max bytes with no maximum waits for them instead of overflowing")
    func hugePrefixDoesNotOverflow() throws {
        var splitter = LengthPrefixedSplitter(lengthPrefix: .uint64BigEndian, maximumLength: .max)
        splitter.append([0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x61])
        #expect(try splitter.next() == nil)
        #expect(throws: FramingError.endOfStreamInsideFrame(receivedBytes: 9)) { try splitter.finish() }
        var largest = LengthPrefixedSplitter(lengthPrefix: .uint64BigEndian, maximumLength: .max)
        largest.append([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
        #expect(throws: FramingError.frameTooLong(length: .max, maximumLength: .max)) { try largest.next() }
    }

    @Test("a peer sending 7f ff ff ff ff ff ff ff to frames(.uint64BigEndian, maximumLength: .max) ends the sequence with an error")
    func hugePrefixFromAPeer() async throws {
        try await withConnectedTCPPair(loopName: "net.handover") { server, client, _ in
            try await client.write([0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).get()
            client.shutdown()
            await #expect(throws: FramingError.endOfStreamInsideFrame(receivedBytes: 8)) {
                _ = try await collect(server.frames(lengthPrefix: .uint64BigEndian, maximumLength: .max))
            }
        }
    }
}
