import Dispatch
import Flow
import FlowNet
import FlowSystem
import Foundation
import Synchronization
import Testing

/// Threads racing a loop through FlowNet's and FlowSystem's requests: each request is made, observed
/// and cancelled from threads other than the loop's, and every future must complete exactly once.
/// Run under ThreadSanitizer by `Scripts/sanitizers`, so the counts are small.
@Suite("Stress: threads racing thread-pool work, file reads and UDP sends", .serialized)
struct IOStressTests {
    static let threadCount = 4

    /// Runs `body(index)` on `threadCount` threads at once and returns when all are done.
    static func onThreads(_ body: @escaping @Sendable (Int) -> Void) {
        DispatchQueue.concurrentPerform(iterations: threadCount, execute: body)
    }

    /// Counts completions of one future, expecting exactly one.
    final class Completions: Sendable {
        let expected: Int
        let seen = Atomic(0)
        let wrong = Atomic(0)
        let done = DispatchGroup()

        init(expected: Int) {
            self.expected = expected
            for _ in 0..<expected { done.enter() }
        }

        func record(isRight: Bool) {
            if !isRight { wrong.add(1, ordering: .relaxed) }
            if seen.add(1, ordering: .relaxed).newValue <= expected { done.leave() }
        }

        func wait() -> Bool { done.wait(timeout: .now() + .seconds(hangGuardSeconds)) == .success }
    }

    @Test func threadPoolWorkSubmittedObservedAndCancelledFromThreadsCompletesOnce() {
        let loop = EventLoop.startOnNewThread(name: "stress.pool")
        defer { loop.shutdown() }
        let perThread = 500
        let completions = Completions(expected: Self.threadCount * perThread * 2)
        let ran = Atomic(0)
        Self.onThreads { thread in
            for index in 0..<perThread {
                let input = thread * 10_000 + index
                let work = ThreadPool.run(on: loop) { () -> Int in
                    ran.add(1, ordering: .relaxed)
                    return input * 2
                }
                let isCancelled = index % 3 == 0
                if isCancelled { work.cancel() }
                // Two observers, one here and one from another thread: each sees the result once.
                let check: @Sendable (Result<Int>) -> Void = { result in
                    switch result {
                    case .success(let value): completions.record(isRight: value == input * 2)
                    case .failure(let error): completions.record(isRight: isCancelled && error is FutureError)
                    }
                }
                work.onResult(on: .none, check)
                DispatchQueue.global().async { work.onResult(on: .none, check) }
            }
        }
        #expect(completions.wait(), "a thread-pool future never completed")
        #expect(completions.seen.load(ordering: .relaxed) == completions.expected)
        #expect(completions.wrong.load(ordering: .relaxed) == 0)
        #expect(ran.load(ordering: .relaxed) <= Self.threadCount * perThread)
    }

    @Test func fileReadsFromThreadsWithCancellationEachCompleteOnceWithTheirBytes() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("numbers")
        let content = (0..<4096).map { UInt8(truncatingIfNeeded: $0) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(content)))
        let loop = EventLoop.startOnNewThread(name: "stress.files")
        defer { loop.shutdown() }
        let file = try #require(try wait(for: FileSystem.open(path, on: loop))?.get())
        let perThread = 250
        let completions = Completions(expected: Self.threadCount * perThread)
        Self.onThreads { thread in
            for index in 0..<perThread {
                let offset = (thread * perThread + index) % 4000
                let read = file.read(upTo: 16, at: Int64(offset))
                let isCancelled = index.isMultiple(of: 2)
                if isCancelled { read.cancel() }
                read.onResult(on: .none) { result in
                    switch result {
                    case .success(let bytes): completions.record(isRight: bytes == Array(content[offset..<offset + 16]))
                    case .failure: completions.record(isRight: isCancelled)
                    }
                }
            }
        }
        #expect(completions.wait(), "a file read never completed")
        #expect(completions.seen.load(ordering: .relaxed) == completions.expected)
        #expect(completions.wrong.load(ordering: .relaxed) == 0)
        _ = wait(for: file.close())
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func chunkSequencesReadConcurrentlyFromTasksGiveEveryByteInOrder() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("chunks")
        let content = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try Data(content).write(to: URL(fileURLWithPath: path))
        let loop = EventLoop.startOnNewThread(name: "stress.chunks")
        defer { loop.shutdown() }
        let matches = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<Self.threadCount {
                group.addTask {
                    let file = try await FileSystem.open(path, on: loop).get()
                    var received: [UInt8] = []
                    for try await chunk in file.chunks(size: 4_096) { received += chunk }
                    try await file.close().get()
                    return received == content
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(matches == Self.threadCount)
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test func udpSendsFromThreadsRacingACloseFromAnotherThreadEachCompleteOnce() throws {
        let loop = EventLoop.startOnNewThread(name: "stress.udp")
        defer { loop.shutdown() }
        let received = Atomic(0)
        let (server, client) = try loop.scheduler.sync { () throws -> (UDPSocket, UDPSocket) in
            let server = try UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
            server.onReceive { _ in received.add(1, ordering: .relaxed) }
            return (server, try UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop))
        }
        let perThread = 300
        let completions = Completions(expected: Self.threadCount * perThread)
        let succeeded = Atomic(0)
        let closer = DispatchGroup()
        Self.onThreads { thread in
            for index in 0..<perThread {
                if thread == 0, index == perThread / 2 {
                    // Halfway through, a thread of its own closes the client under the others' sends.
                    DispatchQueue.global().async(group: closer) { client.close() }
                }
                client.send([UInt8(truncatingIfNeeded: index)], to: server.localAddress).onResult(on: .none) { result in
                    if result.value != nil { succeeded.add(1, ordering: .relaxed) }
                    completions.record(isRight: true)
                }
            }
        }
        closer.wait()
        #expect(completions.wait(), "a UDP send never completed")
        #expect(completions.seen.load(ordering: .relaxed) == completions.expected)
        _ = wait(for: client.close())
        // Loopback delivers what was sent (the socket's buffer holds these few bytes); nothing more.
        let sent = succeeded.load(ordering: .relaxed)
        _ = wait(for: server.close())
        #expect(received.load(ordering: .relaxed) <= sent)
    }
}
