import Dispatch
import Flow
import FlowNet
import FlowSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Waits up to `seconds` for `future`; its result, or `nil` if it did not complete in time.
private func result<Value>(of future: Future<Value>, within seconds: Int) -> Result<Value>? {
    let done = DispatchSemaphore(value: 0)
    future.onResult(on: .none) { _ in done.signal() }
    guard done.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
    return future.result
}

/// Four opens of FIFOs nobody wrote took libuv's four pool threads, and an unrelated `status` waited
/// behind them for as long as they did (over 5 s in the trial, for good without a writer).
@Suite("Thread pool: work that may block", .serialized)
struct ThreadPoolStarvationTests {
    @Test("opening as many FIFOs without writers as the pool has threads leaves a thread for a status")
    func fifoOpensLeaveThreadsFree() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let fifos = (0..<ThreadPool.size).map { folder.file("fifo-\($0)") }
        for fifo in fifos { #expect(mkfifo(fifo, 0o600) == 0) }
        try FileManager.default.createDirectory(atPath: folder.file("plain"), withIntermediateDirectories: false)

        try withLoopOnOwnThread(name: "test.fifos") { loop in
            let opens = fifos.map { FileSystem.open($0, .read, on: loop) }
            let status = result(of: FileSystem.status(ofItemAt: folder.file("plain"), on: loop), within: 5)
            #expect(status != nil, "a status waited behind FIFO opens for 5 s")
            #expect(try status?.get().isDirectory == true)

            // Release the opens: a FIFO opened for reading and writing never waits, and counts as a writer.
            let writers = fifos.map { Glibc.open($0, O_RDWR | O_NONBLOCK | O_CLOEXEC) }
            #expect(writers.allSatisfy { $0 >= 0 })
            for open in opens {
                let file = try #require(result(of: open, within: hangGuardSeconds)).get()
                _ = result(of: file.close(), within: hangGuardSeconds)
            }
            for writer in writers where writer >= 0 { Glibc.close(writer) }
        }
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }

    @Test("work that may block holds at most half the pool; other work runs meanwhile, and the rest waits its turn")
    func blockingWorkIsLimited() throws {
        let release = DispatchSemaphore(value: 0)
        let running = Shared((now: 0, most: 0))
        withLoopOnOwnThread(name: "test.blocking") { loop in
            let blockers = (0..<ThreadPool.size).map { _ in
                ThreadPool.run(on: loop, mayBlock: true) {
                    running.mutate { $0.now += 1; $0.most = max($0.most, $0.now) }
                    release.wait()
                    running.mutate { $0.now -= 1 }
                }
            }
            let other = result(of: ThreadPool.run(on: loop) { 42 }, within: 5)
            #expect(other?.value == 42, "ordinary pool work waited behind blocking work for 5 s")
            for _ in blockers { release.signal() }
            for blocker in blockers { #expect(result(of: blocker, within: hangGuardSeconds) != nil) }
        }
        #expect(running.value.most <= ThreadPool.blockingWorkLimit)
        #expect(ThreadPool.blockingWorkLimit < ThreadPool.size || ThreadPool.size == 1)
    }

    @Test("name lookups count against the blocking-work limit: with its slots held, a lookup waits while a status runs")
    func nameLookupsShareTheBlockingLimit() throws {
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        try withLoopOnOwnThread(name: "test.lookups") { loop in
            let blockers = (0..<ThreadPool.blockingWorkLimit).map { _ in
                ThreadPool.run(on: loop, mayBlock: true) {
                    started.signal()
                    release.wait()
                }
            }
            for _ in blockers { started.wait() }
            // Every slot is held: the lookup waits its turn, as a hanging resolver's lookups would,
            // and the pool's other threads stay free for file work.
            let lookup = NameResolver.resolve(host: "localhost", service: "80", on: loop)
            let status = result(of: FileSystem.status(ofItemAt: "/", on: loop), within: hangGuardSeconds)
            #expect(try status?.get().isDirectory == true)
            #expect(lookup.result == nil)
            release.signal()
            let addresses = try #require(result(of: lookup, within: hangGuardSeconds)).get()
            #expect(!addresses.isEmpty)
            for _ in blockers.dropFirst() { release.signal() }
            for blocker in blockers { _ = result(of: blocker, within: hangGuardSeconds) }
        }
    }

    @Test("the pool's size is fixed once the pool is in use, and within 1...1024: other sizes are refused")
    func sizeIsFixedOnceInUse() throws {
        withLoopOnOwnThread(name: "test.size") { loop in
            _ = result(of: ThreadPool.run(on: loop) { 1 }, within: hangGuardSeconds)
        }
        let size = ThreadPool.size
        #expect(throws: ThreadPoolError.alreadyStarted(size: size)) { try ThreadPool.setSize(size + 1) }
        #expect(throws: ThreadPoolError.invalidSize(0)) { try ThreadPool.setSize(0) }
        #expect(throws: ThreadPoolError.invalidSize(1025)) { try ThreadPool.setSize(1025) }
        #expect(ThreadPool.size == size)
        let environment = ProcessInfo.processInfo.environment["UV_THREADPOOL_SIZE"]
        #expect(size == environment.flatMap { Int($0) }.map { min(max($0, 1), ThreadPool.maximumSize) } ?? 4)
    }

    @Test("a size set before the pool's first use is applied: work runs on that many threads at once")
    func sizeSetBeforeFirstUseApplies() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            try ThreadPool.setSize(6)
            let started = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let loop = EventLoop.startOnNewThread(name: "sized")
            let jobs = (0..<6).map { _ in ThreadPool.run(on: loop) { started.signal(); release.wait() } }
            // All six run at once only if the pool has six threads.
            for _ in 0..<6 where started.wait(timeout: .now() + 10) != .success { exit(2) }
            for _ in jobs { release.signal() }
            print("size \(ThreadPool.size), blocking limit \(ThreadPool.blockingWorkLimit)")
            loop.shutdown()
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        #expect(output.contains("size 6, blocking limit 3"))
    }
}
