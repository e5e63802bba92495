import BenchmarkSupport
import Flow
import FlowSystem
import Foundation
import NIOCore
import NIOPosix
import _NIOFileSystem

/// P15: reading a 1 GiB file, in 64 KiB chunks one after the other and in one call. The file is
/// `FLOW_BENCH_FILE` (made once by `Benchmarks/run` for all implementations and rounds); without it,
/// the program makes one of its own and removes it when done. The file was just written, so the
/// reads come from the page cache: these are memory speeds, not the disk's.
enum FileWorkloads {
    static let fileSize = 1 << 30
    static let chunkSize = 64 * 1024

    /// The file's path, and whether this process made it (and so removes it).
    static func prepareFile() -> (path: String, isOwn: Bool) {
        if let given = ProcessInfo.processInfo.environment["FLOW_BENCH_FILE"] {
            return (given, false)
        }
        let path = FileManager.default.temporaryDirectory.path + "/flow-bench-\(getpid()).bin"
        let chunk = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = FileHandle(forWritingAtPath: path)!
        for _ in 0..<(fileSize >> 20) { handle.write(chunk) }
        try! handle.close()
        return (path, true)
    }

    /// Reads the file once to count allocations (and warm up), then once for the time; records MB/s
    /// (10^6 bytes) and the allocations per chunk or per call. `read` returns the bytes it read, and is
    /// told how many chunks to read (`Int.max`: the whole file).
    static func measure(
        _ reporter: Reporter, chunked: Bool, _ read: (_ path: String, _ chunks: Int, _ stopwatch: Stopwatch) -> Int
    ) {
        let (path, isOwn) = prepareFile()
        defer { if isOwn { try? FileManager.default.removeItem(atPath: path) } }
        // Counting: a tenth of the file in chunks, or the whole file in one call.
        let countedChunks = chunked ? fileSize / chunkSize / 10 : Int.max
        let counting = Stopwatch(countsAllocations: true)
        let countedBytes = read(path, countedChunks, counting)
        let timing = Stopwatch(countsAllocations: false)
        let bytes = read(path, Int.max, timing)
        guard bytes == fileSize, countedBytes == (chunked ? countedChunks * chunkSize : fileSize) else {
            fatalError("\(reporter.workload) \(reporter.implementation): read \(bytes) bytes")
        }
        reporter.record("MB/s", Double(bytes) / 1e6 / (Double(timing.elapsedNanoseconds) / 1e9))
        // Per operation: per chunk, or per whole-file read.
        reporter.record("allocs/op", Double(counting.allocations) / Double(chunked ? countedChunks : 1))
    }

    // MARK: Flow

    /// The chunks as an `AsyncSequence`, consumed by a task: the same shape as NIO's `readChunks`.
    static func flowChunks(_ reporter: Reporter) {
        let loop = EventLoop.startOnNewThread(name: "bench.files")
        defer { loop.shutdown() }
        measure(reporter, chunked: true) { path, chunks, stopwatch in
            let total = LoopBox(0)
            blockingAwait {
                stopwatch.start()
                let file = try await FileSystem.open(path, .read, on: loop).get()
                var remaining = chunks
                for try await chunk in file.chunks(size: chunkSize) {
                    total.value += chunk.count
                    remaining -= 1
                    if remaining == 0 { break }
                }
                try await file.close().get()
                stopwatch.stop()
            }
            return total.value
        }
    }

    /// One `read(upTo:)` after the other, each started from the previous one's callback on the loop.
    static func flowChunksOneByOne(_ reporter: Reporter) {
        measure(reporter, chunked: true) { path, chunks, stopwatch in
            let total = LoopBox(0)
            onNewLoop { loop in
                stopwatch.start()
                FileSystem.open(path, .read, on: loop).onValue { file in
                    let remaining = LoopBox(chunks)
                    @Sendable func readNext() {
                        file.read(upTo: chunkSize).onValue { chunk in
                            total.value += chunk.count
                            remaining.value -= 1
                            if chunk.isEmpty || remaining.value == 0 {
                                file.close().onValue { stopwatch.stop() }
                            } else {
                                readNext()
                            }
                        }
                    }
                    readNext()
                }
            }
            return total.value
        }
    }

    static func flowWhole(_ reporter: Reporter) {
        measure(reporter, chunked: false) { path, _, stopwatch in
            let total = LoopBox(0)
            onNewLoop { loop in
                stopwatch.start()
                FileSystem.readFile(at: path, limit: 2 << 30, on: loop).onValue { bytes in
                    stopwatch.stop()
                    total.value = bytes.count
                }
            }
            return total.value
        }
    }

    // MARK: SwiftNIO's file system

    static func nioChunks(_ reporter: Reporter) {
        measure(reporter, chunked: true) { path, chunks, stopwatch in
            let total = LoopBox(0)
            blockingAwait {
                stopwatch.start()
                try await _NIOFileSystem.FileSystem.shared.withFileHandle(forReadingAt: FilePath(path)) { handle in
                    var remaining = chunks
                    let chunkLength = ByteCount.bytes(Int64(chunkSize))
                    for try await chunk in handle.readChunks(in: 0..<Int64(fileSize), chunkLength: chunkLength) {
                        total.value += chunk.readableBytes
                        remaining -= 1
                        if remaining == 0 { break }
                    }
                }
                stopwatch.stop()
            }
            return total.value
        }
    }

    static func nioWhole(_ reporter: Reporter) {
        measure(reporter, chunked: false) { path, _, stopwatch in
            let total = LoopBox(0)
            blockingAwait {
                stopwatch.start()
                let buffer = try await _NIOFileSystem.FileSystem.shared.withFileHandle(
                    forReadingAt: FilePath(path)
                ) { handle in
                    try await handle.readToEnd(maximumSizeAllowed: .gibibytes(2))
                }
                stopwatch.stop()
                total.value = buffer.readableBytes
            }
            return total.value
        }
    }

    // MARK: Foundation

    static func foundationChunks(_ reporter: Reporter) {
        measure(reporter, chunked: true) { path, chunks, stopwatch in
            var total = 0
            stopwatch.start()
            let handle = FileHandle(forReadingAtPath: path)!
            var remaining = chunks
            while remaining > 0, let chunk = try! handle.read(upToCount: chunkSize), !chunk.isEmpty {
                total += chunk.count
                remaining -= 1
            }
            try! handle.close()
            stopwatch.stop()
            return total
        }
    }

    static func foundationWhole(_ reporter: Reporter) {
        measure(reporter, chunked: false) { path, _, stopwatch in
            stopwatch.start()
            let handle = FileHandle(forReadingAtPath: path)!
            let data = try! handle.readToEnd() ?? Data()
            try! handle.close()
            stopwatch.stop()
            return data.count
        }
    }
}
