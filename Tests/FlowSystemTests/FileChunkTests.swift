import Flow
@testable import FlowSystem
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `OpenFile.chunks(size:)`: two reads of consecutive ranges in flight on two pool threads, handed over
/// in order; a consumer that stops early or is cancelled stops the reads; short, empty and truncated
/// files.
@Suite("File chunks")
struct FileChunkTests {
    /// A file of `count` bytes of a pattern of a prime length, so a chunk out of place shows.
    private func makeFile(_ folder: TemporaryFolder, count: Int) throws -> (String, [UInt8]) {
        let path = folder.file("data")
        let bytes = (0..<count).map { UInt8(truncatingIfNeeded: ($0 % 4_099) &* 31 &+ $0 >> 12) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return (path, bytes)
    }

    @Test func chunksReadByTwoJobsAtOnceComeInTheFilesOrder() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        // Many reads of four chunks each, two in flight at a time; the size is not a multiple of a chunk.
        let (path, bytes) = try makeFile(folder, count: 40 * FileChunks.readAheadLimit * 1_024 + 777)
        let loop = EventLoop.startOnNewThread(name: "chunks.order")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        var iterator = file.chunks(size: 1_024).makeAsyncIterator()
        var received: [UInt8] = []
        var sizes: [Int] = []
        while let chunk = try await iterator.next() {
            received += chunk
            sizes.append(chunk.count)
        }
        #expect(received == bytes)
        #expect(sizes.dropLast().allSatisfy { $0 == 1_024 } && sizes.last == 777)
        #expect(iterator.reader.readsClaimed >= bytes.count / (FileChunks.chunksPerRead * 1_024))
        await iterator.reader.waitUntilIdle()
        #expect(try await file.read(upTo: 10).get().isEmpty, "the position is at the end")
        try await file.close().get()
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aConsumerThatStopsEarlyStopsTheReads() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, bytes) = try makeFile(folder, count: 1 << 20)
        let loop = EventLoop.startOnNewThread(name: "chunks.stop")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        let reader: ChunkReader
        var received: [UInt8] = []
        do {
            var iterator = file.chunks(size: 4_096).makeAsyncIterator()
            for _ in 0..<3 { received += try await iterator.next() ?? [] }
            reader = iterator.reader
        }   // the iterator is dropped here
        await reader.waitUntilIdle()
        let claimed = reader.readsClaimed
        #expect(received == Array(bytes[..<(3 * 4_096)]))
        // Never more than the read-ahead past what was taken.
        #expect(claimed * FileChunks.chunksPerRead <= 3 + FileChunks.readAheadLimit)
        try await file.close().get()
        #expect(reader.readsClaimed == claimed, "no read started after the consumer left")
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aTaskCancelledBetweenChunksGetsCancellationErrorAndTheReadsStop() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, _) = try makeFile(folder, count: 1 << 20)
        let loop = EventLoop.startOnNewThread(name: "chunks.cancel")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        let outcome = await Task { () -> (ChunkReader, Int, (any Error)?) in
            var iterator = file.chunks(size: 4_096).makeAsyncIterator()
            var count = 0
            do {
                while try await iterator.next() != nil {
                    count += 1
                    if count == 2 { withUnsafeCurrentTask { $0?.cancel() } }
                }
                return (iterator.reader, count, nil)
            } catch {
                return (iterator.reader, count, error)
            }
        }.value
        #expect(outcome.1 == 2)
        #expect(outcome.2 is CancellationError)
        await outcome.0.waitUntilIdle()
        try await file.close().get()
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aTaskCancelledAfterTheSequenceEndedGetsNilAgain() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, _) = try makeFile(folder, count: 10_000)
        let loop = EventLoop.startOnNewThread(name: "chunks.cancel.ended")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        let outcome = await Task { () -> (count: Int, afterEnd: Swift.Result<[UInt8]?, any Error>) in
            var iterator = file.chunks(size: 4_096).makeAsyncIterator()
            var count = 0
            do {
                while try await iterator.next() != nil { count += 1 }
            } catch {
                return (count, .failure(error))
            }
            withUnsafeCurrentTask { $0?.cancel() }
            do {
                return (count, .success(try await iterator.next()))
            } catch {
                return (count, .failure(error))
            }
        }.value
        #expect(outcome.count == 3)
        #expect(try outcome.afterEnd.get() == nil)
        try await file.close().get()
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aTaskCancelledWhileWaitingForARead() async throws {
        // A pipe with nothing written: the consumer waits for the read until its task is cancelled.
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let loop = EventLoop.startOnNewThread(name: "chunks.cancel.waiting")
        defer { loop.shutdown() }
        let file = try await FileSystem.open("/proc/self/fd/\(descriptors[0])", on: loop).get()
        Glibc.close(descriptors[0])
        let chunks = file.chunks(size: 4_096)
        let started = Mutex<ChunkReader?>(nil)
        let task = Task { () -> (any Error)? in
            var iterator = chunks.makeAsyncIterator()
            started.withLock { $0 = iterator.reader }
            do {
                while try await iterator.next() != nil {}
                return nil
            } catch {
                return error
            }
        }
        // A read was claimed once the consumer waits (it registers before it starts the job).
        while started.withLock({ $0?.readsClaimed ?? 0 }) == 0 { await Task.yield() }
        task.cancel()
        #expect(await task.value is CancellationError)
        // The read on the pool still waits for the pipe: its end lets it finish.
        Glibc.close(descriptors[1])
        await started.withLock { $0 }?.waitUntilIdle()
        try await file.close().get()
    }

    @Test func aShortFileIsOneChunkAndAnEmptyFileNone() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let loop = EventLoop.startOnNewThread(name: "chunks.short")
        defer { loop.shutdown() }
        let (path, bytes) = try makeFile(folder, count: 100)
        let file = try await FileSystem.open(path, on: loop).get()
        var chunks: [[UInt8]] = []
        for try await chunk in file.chunks(size: 4_096) { chunks.append(chunk) }
        try await file.close().get()
        #expect(chunks == [bytes])

        let emptyPath = folder.file("empty")
        try Data().write(to: URL(fileURLWithPath: emptyPath))
        let empty = try await FileSystem.open(emptyPath, on: loop).get()
        var count = 0
        for try await _ in empty.chunks(size: 4_096) { count += 1 }
        try await empty.close().get()
        #expect(count == 0)
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aFileTruncatedWhileBeingReadEndsAtItsNewEndWithNothingSkipped() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, bytes) = try makeFile(folder, count: 1 << 20)
        let loop = EventLoop.startOnNewThread(name: "chunks.truncated")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        var iterator = file.chunks(size: 4_096).makeAsyncIterator()
        var received = try await iterator.next() ?? []
        // The read-ahead is full and no read runs: cut the file short past it.
        await iterator.reader.waitUntilIdle()
        let newSize = 100_001
        #expect(truncate(path, off_t(newSize)) == 0)
        while let chunk = try await iterator.next() { received += chunk }
        #expect(received.count == newSize)
        #expect(received == Array(bytes[..<newSize]))
        try await file.close().get()
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    /// Once the file is closed its descriptor's number may name another file: the sequence reads
    /// nothing more through it and fails with `EBADF`.
    @Test func chunksOfAClosedFileFailWithEBADF() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let (path, _) = try makeFile(folder, count: 1 << 16)
        let loop = EventLoop.startOnNewThread(name: "chunks.closed")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        try await file.close().get()
        var iterator = file.chunks(size: 4_096).makeAsyncIterator()
        let error = await #expect(throws: EventLoopError.self) { try await iterator.next() }
        #expect(error.map(String.init(describing:))?.hasPrefix("EBADF") == true, "\(String(describing: error))")
        #expect(iterator.reader.readsClaimed == 0)
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aChunkSizeThatIsNotPositiveStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try runLoop { loop in
                FileSystem.open("/dev/null", on: loop).onValue { file in _ = file.chunks(size: 0) }
            }
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("OpenFile.chunks(size:): the chunk size must be positive, not 0"), "\(output)")
    }
}
