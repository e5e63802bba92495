import Flow
@testable import FlowSystem
import Foundation
import Testing

/// `readToEnd` reads a large file in two halves at the same time; these check that the halves put
/// exactly the file's bytes together, whatever its size and however it differs from the size expected.
@Suite("Split reads")
struct SplitReadTests {
    /// A file of `count` bytes in `folder`: a pattern of a prime length (4,099) over and over, so a
    /// piece out of place shows.
    private func makeFile(_ folder: TemporaryFolder, _ name: String, count: Int) throws -> (String, [UInt8]) {
        let path = folder.file(name)
        let pattern = (0..<4_099).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + pattern.count)
        while bytes.count < count { bytes.append(contentsOf: pattern) }
        bytes.removeSubrange(count...)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    /// Whether two byte arrays are equal, compared with `memcmp` (fast in a debug build too).
    private func same(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        left.count == right.count && left.withUnsafeBytes { left in
            right.withUnsafeBytes { right in
                left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
    }

    @Test func aLargeFileOfAnOddSizeIsReadWholeAndExactly() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let count = OpenFile.splitReadMinimum + 12_345   // halves of different sizes, not page multiples
        let (path, bytes) = try makeFile(folder, "large", count: count)
        let loop = EventLoop.startOnNewThread(name: "files.split")
        defer { loop.shutdown() }
        let read = try await FileSystem.readFile(at: path, on: loop).get()
        #expect(read.count == count)
        #expect(same(read, bytes))
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aSplitReadFromThePositionLeavesItAtTheEnd() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, bytes) = try makeFile(folder, "large", count: OpenFile.splitReadMinimum + 5_001)
        let loop = EventLoop.startOnNewThread(name: "files.split")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        let skipped = try await file.read(upTo: 1_001).get()
        let rest = try await file.readToEnd().get()
        #expect(same(skipped, Array(bytes[..<1_001])))
        #expect(same(rest, Array(bytes[1_001...])))
        #expect(try await file.read(upTo: 10).get().isEmpty, "the position is at the end")
        try await file.close().get()
    }

    @Test(arguments: [
        (fileSize: 1_000, expected: 3_000),   // the first half ends early: nothing of the second counts
        (fileSize: 2_500, expected: 3_000),   // the second half ends early
        (fileSize: 3_000, expected: 3_000),
        (fileSize: 3_001, expected: 3_000),   // more than expected: the halves read what was expected
        (fileSize: 0, expected: 3_001),
    ])
    func halvesReadWhatTheFileHasUpToTheCountExpected(fileSize: Int, expected: Int) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, bytes) = try makeFile(folder, "file", count: fileSize)
        let loop = EventLoop.startOnNewThread(name: "files.halves")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        let collected = ReadCollector(capacity: expected + 1)
        let read = try await file.readInParts(into: collected, from: 0, count: expected).get()
        collected.count = read
        #expect(read == min(fileSize, expected))
        #expect(same(collected.takeBytes(), Array(bytes[..<read])))
        try await file.close().get()
    }

    @Test func anEmptyFileIsReadAsNoBytes() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, _) = try makeFile(folder, "empty", count: 0)
        let loop = EventLoop.startOnNewThread(name: "files.empty")
        defer { loop.shutdown() }
        #expect(try await FileSystem.readFile(at: path, on: loop).get().isEmpty)
    }
}
