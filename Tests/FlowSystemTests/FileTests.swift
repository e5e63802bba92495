import Flow
import FlowSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Files")
struct FileTests {
    @Test func writeFileThenReadFileGivesTheBytesBackAndLeavesNoTemporaryFile() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("data.bin")
        let bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let read = Shared<Result<[UInt8]>?>(nil)
        let entries = Shared<[FileSystem.DirectoryEntry]>([])
        try runLoop { loop in
            FileSystem.writeFile(at: path, contents: [1, 2, 3], on: loop)
                .flatMap { FileSystem.writeFile(at: path, contents: bytes, on: loop) }   // replaces
                .flatMap { FileSystem.readFile(at: path, on: loop) }
                .onResult { read.value = $0 }
                .flatMap { _ in FileSystem.contentsOfDirectory(at: folder.path, on: loop) }
                .onValue { entries.value = $0 }
        }
        #expect(try #require(read.value).get() == bytes)
        #expect(entries.value.map(\.name) == ["data.bin"], "the temporary file was renamed away")
        #expect(entries.value.first?.isRegularFile == true)
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func openWriteSyncStatReadAtOffsetAndClose() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("log.txt")
        let found = Shared<(FileStatus?, [UInt8]?, [UInt8]?)>((nil, nil, nil))
        try runLoop { loop in
            FileSystem.open(path, .write, permissions: 0o600, on: loop)
                .flatMap { file in
                    file.write(Array("hello, ".utf8)).flatMap { file.write(Array("world".utf8)) }
                        .flatMap { file.synchronize() }
                        .flatMap { file.status() }
                        .always { file.close() }
                }
                .onValue { status in found.mutate { $0.0 = status } }
                .flatMap { _ in FileSystem.open(path, on: loop) }
                .flatMap { file in
                    file.read(upTo: 5, at: 7).flatMap { word in
                        file.read(upTo: 100).map { (word, $0) }
                    }.always { file.close() }
                }
                .onValue { word, all in found.mutate { $0.1 = word; $0.2 = all } }
        }
        let (status, word, all) = found.value
        #expect(status?.size == 12)
        #expect(status?.permissions == 0o600)
        #expect(status?.isRegularFile == true)
        #expect(word == Array("world".utf8))
        #expect(all == Array("hello, world".utf8), "a read at an offset does not move the position")
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func missingPathsAndForbiddenOperationsFailWithLibuvsErrors() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let errors = Shared<[String: String]>([:])
        try runLoop { loop in
            func record<T>(_ name: String, _ future: Future<T>) {
                future.onError { error in errors.mutate { $0[name] = "\(error)" } }
            }
            record("read", FileSystem.readFile(at: folder.file("missing"), on: loop))
            record("stat", FileSystem.status(ofItemAt: folder.file("missing"), on: loop))
            record("write a directory", FileSystem.open(folder.path, .write, on: loop))
            record("mkdir existing", FileSystem.createDirectory(at: folder.path, on: loop))
            record("mkdir missing parent", FileSystem.createDirectory(at: folder.file("a/b"), on: loop))
            record("rename missing", FileSystem.rename(folder.file("missing"), to: folder.file("x"), on: loop))
            record("unlink missing", FileSystem.removeFile(at: folder.file("missing"), on: loop))
            record("list a file", FileSystem.writeFile(at: folder.file("f"), contents: [1], on: loop)
                .flatMap { FileSystem.contentsOfDirectory(at: folder.file("f"), on: loop) })
            record("too large", FileSystem.writeFile(at: folder.file("big"), contents: [UInt8](repeating: 1, count: 100), on: loop)
                .flatMap { FileSystem.readFile(at: folder.file("big"), limit: 10, on: loop) })
            record("exclusive", FileSystem.open(folder.file("f2"), .createNew, on: loop)
                .flatMap { file in file.close().flatMap { FileSystem.open(folder.file("f2"), .createNew, on: loop) } })
        }
        #expect(errors.value == [
            "read": "ENOENT: no such file or directory",
            "stat": "ENOENT: no such file or directory",
            "write a directory": "EISDIR: illegal operation on a directory",
            "mkdir existing": "EEXIST: file already exists",
            "mkdir missing parent": "ENOENT: no such file or directory",
            "rename missing": "ENOENT: no such file or directory",
            "unlink missing": "ENOENT: no such file or directory",
            "list a file": "ENOTDIR: not a directory",
            "too large": "EFBIG: file too large",
            "exclusive": "EEXIST: file already exists",
        ])
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aPathHoldingANulByteIsRefusedRatherThanCutShort() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let victim = folder.file("victim")
        _ = FileManager.default.createFile(atPath: victim, contents: Data("keep".utf8))
        let cut = victim + "\u{0}.old"
        let errors = Shared<[String: String]>([:])
        try runLoop { loop in
            func record<T>(_ name: String, _ future: Future<T>) {
                future.onResult { result in errors.mutate { $0[name] = result.error.map { "\($0)" } ?? "done" } }
            }
            // Cut at the NUL byte, each of these would act on `victim`.
            record("unlink", FileSystem.removeFile(at: cut, on: loop))
            record("rename", FileSystem.rename(cut, to: folder.file("moved"), on: loop))
            record("rename to", FileSystem.rename(folder.file("missing"), to: cut, on: loop))
            record("open", FileSystem.open(cut, .write, on: loop))
            record("stat", FileSystem.status(ofItemAt: cut, on: loop))
            record("mkdir", FileSystem.createDirectory(at: folder.file("d\u{0}x"), on: loop))
            record("rmdir", FileSystem.removeDirectory(at: folder.path + "\u{0}/x", on: loop))
            record("list", FileSystem.contentsOfDirectory(at: folder.path + "\u{0}/x", on: loop))
            record("read", FileSystem.readFile(at: cut, on: loop))
            record("write", FileSystem.writeFile(at: cut, contents: [1], on: loop))
            do {
                let watcher = try PathWatcher.watch(folder.path + "\u{0}/x", on: loop)
                watcher.close()
                errors.mutate { $0["watch"] = "done" }
            } catch {
                errors.mutate { $0["watch"] = "\(error)" }
            }
        }
        let invalid = "EINVAL: invalid argument"
        #expect(errors.value == [
            "unlink": invalid, "rename": invalid, "rename to": invalid, "open": invalid, "stat": invalid,
            "mkdir": invalid, "rmdir": invalid, "list": invalid, "read": invalid, "write": invalid, "watch": invalid,
        ])
        #expect(FileManager.default.contents(atPath: victim) == Data("keep".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["victim"])
    }

    /// A file whose status gives no size (`/proc`'s, a pipe's) grows past what was allocated for it as
    /// it is read: the limit `Int.max`, "no limit", must not overflow then.
    @Test func readingAFileWithoutASizeUpToIntMaxWorks() throws {
        let read = Shared<Result<[UInt8]>?>(nil)
        try runLoop { loop in
            FileSystem.readFile(at: "/proc/self/status", limit: .max, on: loop).onResult { read.value = $0 }
        }
        let bytes = try #require(read.value).get()
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("Name:"))
    }

    @Test func aFileIsNotUsedThroughItsDescriptorNumberOnceClosed() async {
        // In a process of its own: the test puts another file at the closed file's descriptor number,
        // which no other test may open meanwhile.
        let outcome = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let (results, secondSize) = try useAClosedFileWhoseNumberNamesAnotherFile()
            guard results == Array(repeating: "EBADF: bad file descriptor", count: 5), secondSize == 0 else {
                FileHandle.standardError.write(Data("results: \(results), second file's size: \(secondSize)\n".utf8))
                exit(1)
            }
        }
        if outcome?.exitStatus != .exitCode(0) {
            Issue.record("the child said: \(String(decoding: outcome?.standardErrorContent ?? [], as: UTF8.self))")
        }
    }

    @Test func aNegativeReadCountOrLimitStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try runLoop { loop in
                FileSystem.open("/dev/null", on: loop).onValue { file in _ = file.read(upTo: -1) }
            }
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("OpenFile.read(upTo:): the count must not be negative, not -1"), "\(output)")
        let limited = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = FileSystem.readFile(at: "/dev/null", limit: -1, on: EventLoop(name: "negative.limit"))
        }
        let limitOutput = String(decoding: limited?.standardErrorContent ?? [], as: UTF8.self)
        #expect(limitOutput.contains("FileSystem.readFile: the limit must not be negative, not -1"), "\(limitOutput)")
    }

    /// A read larger than one request takes is cut to what one request reads (1 GiB), as a short read,
    /// rather than allocating all of it.
    @Test func aHugeReadCountReadsWhatThereIs() throws {
        let read = Shared<Result<[UInt8]>?>(nil)
        try runLoop { loop in
            FileSystem.open("/proc/self/status", on: loop).flatMap { file in
                file.read(upTo: .max).always { file.close() }
            }.onResult { read.value = $0 }
        }
        let bytes = try #require(read.value).get()
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("Name:"))
    }

    @Test func aFileRemovedWhileBeingReadIsReadToItsEnd() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("doomed")
        let bytes = (0..<200_000).map { UInt8(truncatingIfNeeded: $0) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let loop = EventLoop.startOnNewThread(name: "files.removed")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        var received: [UInt8] = []
        var chunkCount = 0
        for try await chunk in file.chunks(size: 16_384) {
            if chunkCount == 0 { try await FileSystem.removeFile(at: path, on: loop).get() }
            chunkCount += 1
            received += chunk
        }
        try await file.close().get()
        #expect(received == bytes, "an unlinked file stays readable through its open descriptor")
        #expect(chunkCount == 13)
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func chunksReadAheadAtOffsetsComeInOrderFromThePositionAndLeaveItAtTheEnd() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("numbers")
        let bytes = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let loop = EventLoop.startOnNewThread(name: "files.chunks")
        defer { loop.shutdown() }
        let file = try await FileSystem.open(path, on: loop).get()
        let skipped = try await file.read(upTo: 1_000).get()   // the chunks start from here
        var received: [UInt8] = []
        var sizes: Set<Int> = []
        for try await chunk in file.chunks(size: 4_096) {
            received += chunk
            sizes.insert(chunk.count)
        }
        #expect(skipped.count == 1_000)
        #expect(received == Array(bytes[1_000...]))
        #expect(sizes == [4_096, (1_000_000 - 1_000) % 4_096])
        #expect(try await file.read(upTo: 10).get().isEmpty, "the position is at the end")
        try await file.close().get()
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func chunksOfAPipeComeInOrder() async throws {
        var descriptors: [Int32] = [0, 0]
        #expect(pipe(&descriptors) == 0)
        let bytes = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        let writeEnd = descriptors[1]
        let writer = Thread {
            bytes.withUnsafeBytes { raw in
                var written = 0
                while written < raw.count {
                    let count = Glibc.write(writeEnd, raw.baseAddress! + written, raw.count - written)
                    if count <= 0 { break }
                    written += count
                }
            }
            Glibc.close(writeEnd)
        }
        writer.start()
        let loop = EventLoop.startOnNewThread(name: "files.pipe")
        defer { loop.shutdown() }
        let file = try await FileSystem.open("/proc/self/fd/\(descriptors[0])", on: loop).get()
        Glibc.close(descriptors[0])
        var received: [UInt8] = []
        for try await chunk in file.chunks(size: 8_192) { received += chunk }
        try await file.close().get()
        #expect(received == bytes)
    }

    @Test func thousandsOfConcurrentReadsAllSucceedAndCloseEveryDescriptor() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        for index in 0..<50 {
            try Data("file \(index)".utf8).write(to: URL(fileURLWithPath: folder.file("\(index)")))
        }
        let matches = Shared(0)
        try runLoop { loop in
            for index in 0..<2_000 {
                FileSystem.readFile(at: folder.file("\(index % 50)"), on: loop).onValue { bytes in
                    if bytes == Array("file \(index % 50)".utf8) { matches.mutate { $0 += 1 } }
                }
            }
        }
        #expect(matches.value == 2_000)
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aWatchedFolderReportsAFileCreatedInIt() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let names = Shared<Set<String>>([])
        let watchMissing = Shared<String?>(nil)
        try runLoop { loop in
            do {
                _ = try PathWatcher.watch(folder.file("missing"), on: loop)
            } catch {
                watchMissing.value = "\(error)"
            }
            let watcher = LoopState<PathWatcher?>(nil)
            watcher.value = try! PathWatcher.watch(folder.path, on: loop) { change in
                guard let name = change.name else { return }
                names.mutate { _ = $0.insert(name) }
                if name == "new.txt" { watcher.value?.close() }
            }
            FileSystem.writeFile(at: folder.file("new.txt"), contents: [42], on: loop)
        }
        #expect(names.value.contains("new.txt"))
        #expect(watchMissing.value == "ENOENT: no such file or directory")
    }
}

@Suite("Thread pool", .serialized)
struct ThreadPoolTests {
    @Test func blockingWorkRunsOffTheLoopAndItsResultArrivesOnTheLoop() throws {
        let found = Shared<(Result<Int>?, Bool, Bool)>((nil, false, false))
        try runLoop { loop in
            ThreadPool.run(on: loop) { () -> Int in
                found.mutate { $0.1 = loop.isInLoopContext }
                return 6 * 7
            }
            .onResult(on: .none) { result in found.mutate { $0.0 = result; $0.2 = loop.isInLoopContext } }
            ThreadPool.run(on: loop) { () throws -> Int in throw CocoaError(.featureUnsupported) }
                .onError { error in #expect(error is CocoaError) }
        }
        #expect(try found.value.0?.get() == 42)
        #expect(found.value.1 == false, "the work ran on a pool thread")
        #expect(found.value.2 == true, "the result arrived on the loop")
    }

    @Test func aCancelledCloseStillClosesTheFile() throws {
        // Occupy every pool thread, so that the close waits in the pool's queue, cancel it there, then
        // let the pool go: the descriptor must be closed all the same.
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let poolSize = Int(ProcessInfo.processInfo.environment["UV_THREADPOOL_SIZE"] ?? "") ?? 4
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        try runLoop { loop in
            FileSystem.open(folder.file("file"), .write, on: loop).onValue { file in
                let blockers = (0..<poolSize).map { _ in
                    ThreadPool.run(on: loop) {
                        started.signal()
                        release.wait()
                    }
                }
                let closing = file.close()
                DispatchQueue.global().async {
                    for _ in 0..<poolSize { started.wait() }
                    loop.execute {
                        closing.cancel()
                        for _ in 0..<poolSize { release.signal() }
                    }
                }
                _ = blockers
            }
        }
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aWriteFileCancelledAtAnyStepLeavesTheOldContentOrTheNewAndNoTemporaryFile() throws {
        // Each write is cancelled after a different number of round trips through the thread pool, so
        // the cancellations land before the open, during the write, the flush or the close, or after.
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let steps = 0..<16
        let old: [UInt8] = [1, 2, 3]
        let new = (0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        for step in steps {
            try Data(old).write(to: URL(fileURLWithPath: folder.file("target-\(step)")))
        }
        try runLoop { loop in
            @Sendable func afterRoundTrips(_ count: Int, _ then: @escaping @Sendable () -> Void) {
                guard count > 0 else { return then() }
                ThreadPool.run(on: loop) {}.onValue { afterRoundTrips(count - 1, then) }
            }
            for step in steps {
                // Not observed: a future with continuations ignores cancel().
                let writing = FileSystem.writeFile(at: folder.file("target-\(step)"), contents: new, on: loop)
                afterRoundTrips(step) { writing.cancel() }
            }
        }
        // The loop ran until every request of the writes was done.
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        #expect(names == steps.map { "target-\($0)" }.sorted(), "a temporary file was left behind")
        for step in steps {
            let content = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder.file("target-\(step)"))))
            #expect(content == old || content == new, "target-\(step) holds \(content.count) bytes")
        }
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func aCloseWaitsForTheReadsMadeBeforeItAndLaterOnesFailWithEBADF() throws {
        // A read waiting on a FIFO holds a pool thread until the test writes; the close made meanwhile
        // must wait for it, or the descriptor's number could name another file by the time it reads.
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let fifo = folder.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        // The test's own end, read and write, so that opening the FIFO for reading does not block.
        let writer = open(fifo, O_RDWR)
        #expect(writer >= 0)
        let events = Shared<[String]>([])
        try runLoop { loop in
            FileSystem.open(fifo, .read, on: loop).onValue { file in
                file.read(upTo: 5).onResult { result in
                    events.value.append("read \(result.map { String(decoding: $0, as: UTF8.self) })")
                }
                file.close().onResult { result in events.value.append("closed \(result)") }
                file.read(upTo: 5).onResult { result in
                    events.value.append("later read \(String(describing: result.error))")
                }
                // Queued on the pool after the close: a close that did not wait would run first.
                _ = ThreadPool.run(on: loop) { _ = "hello".withCString { write(writer, $0, 5) } }
            }
        }
        #expect(events.value == [
            "later read Optional(EBADF: bad file descriptor)",
            "read success(\"hello\")",
            "closed success()",
        ])
        close(writer)
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func cancellingWorkBeforeAThreadTakesItKeepsItFromRunning() throws {
        // Occupy every pool thread, queue one more job, cancel it, then let the pool go.
        let poolSize = Int(ProcessInfo.processInfo.environment["UV_THREADPOOL_SIZE"] ?? "") ?? 4
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let ranAfterCancel = Shared(false)
        try runLoop { loop in
            let blockers = (0..<poolSize).map { _ in
                ThreadPool.run(on: loop) {
                    started.signal()
                    release.wait()
                }
            }
            let queued = ThreadPool.run(on: loop) { ranAfterCancel.value = true }
            let observed = queued.onResult { _ in }
            DispatchQueue.global().async {
                for _ in 0..<poolSize { started.wait() }
                loop.execute {
                    observed.cancel()
                    for _ in 0..<poolSize { release.signal() }
                }
            }
            _ = blockers
        }
        #expect(ranAfterCancel.value == false)
    }
}

/// Closes a file, puts another at its descriptor number, then reads, writes, syncs and stats through
/// the closed one: what each gave, and what the other file then holds.
private func useAClosedFileWhoseNumberNamesAnotherFile() throws -> (results: [String], secondSize: Int) {
    let folder = try TemporaryFolder()
    defer { folder.cleanUp() }
    let results = Shared<[String]>([])
    @Sendable func record<T>(_ future: Future<T>) -> Future<Void> {
        future.mapResult { result -> Void in
            results.mutate { $0.append(result.error.map { "\($0)" } ?? "done") }
        }
    }
    try runLoop { loop in
        FileSystem.open(folder.file("first"), .write, on: loop).flatMap { first in
            first.close().flatMap { FileSystem.open(folder.file("second"), .readWrite, on: loop) }
                .flatMap { second -> Future<Void> in
                    // The number the first file had names another file now: usually the second (the
                    // lowest free number), else whatever another thread of this process opened meanwhile
                    // (Dispatch's timer, say), which must not be touched.
                    return join([
                        record(first.write(Array("through the closed file".utf8))),
                        record(first.read(upTo: 10, at: 0)),
                        record(first.status()),
                        record(first.synchronize()),
                        record(first.readToEnd()),
                    ]).flatMap { _ in second.close() }
                }
        }.onError { error in results.mutate { $0.append("setup: \(error)") } }
    }
    // The size through `stat`: `FileManager.contents(atPath:)` leaks a buffer, which fails this exit
    // test's process under LeakSanitizer.
    var status = stat()
    guard stat(folder.file("second"), &status) == 0 else { return (results.value, -1) }
    return (results.value, Int(status.st_size))
}
