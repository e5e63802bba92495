import Dispatch
import Flow
import FlowSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every FlowSystem entry point that opens a handle, called from its loop, from another loop's work,
/// from a Dispatch queue and from a detached task (Docs/AnyThread.md). Each test counts the loop's
/// libuv handles, and the descriptors it could have left open, once everything is closed.
@Suite("FlowSystem entry points from any thread")
struct AnyThreadSystemTests {
    @Test("ChildProcess.spawn starts a child with pipes from every caller, leaving no pipe or handle",
          arguments: EntryPointCaller.allCases)
    func spawnFromEveryCaller(_ caller: EntryPointCaller) async throws {
        try await withCountedLoop("anyThread.spawn") { loop in
            let child = try await caller.call(for: loop) {
                try ChildProcess.spawn("/bin/sh", arguments: ["-c", "echo hi"], standardOutput: .pipe, on: loop)
            }
            let output = try #require(child.standardOutput)
            #expect(try await output.read().get() == Array("hi\n".utf8))
            #expect(try await child.exit.get().isSuccess)
            try await caller.call(for: loop) { output.close() }.get()
        }
    }

    @Test("PathWatcher.watch reports a change from every caller, leaving no descriptor or handle",
          arguments: EntryPointCaller.allCases)
    func pathWatcherFromEveryCaller(_ caller: EntryPointCaller) async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withCountedLoop("anyThread.watch") { loop in
            let (changes, delivery) = AsyncStream<String?>.makeStream()
            let watcher = try await caller.call(for: loop) {
                try PathWatcher.watch(folder.path, on: loop) { delivery.yield($0.name) }
            }
            _ = FileManager.default.createFile(atPath: folder.file("new"), contents: Data())
            // Foundation writes through a temporary file, renamed to "new": changes to it come first.
            var sawTheFile = false
            for await name in changes where name == "new" {
                sawTheFile = true
                break
            }
            #expect(sawTheFile)
            try await caller.call(for: loop) { watcher.close() }.get()
            #expect(openDescriptorCount(inside: folder.path) == 0)
        }
    }

    @Test("SignalWatcher.watch opens and closes from every caller, leaving no handle",
          arguments: EntryPointCaller.allCases)
    func signalWatcherFromEveryCaller(_ caller: EntryPointCaller) async throws {
        try await withCountedLoop("anyThread.signals") { loop in
            // SIGWINCH, which no other test watches and whose default action is to do nothing.
            let (signals, delivery) = AsyncStream<ProcessSignal>.makeStream()
            let watcher = try await caller.call(for: loop) {
                try SignalWatcher.watch([.windowSizeChanged], on: loop) { delivery.yield($0) }
            }
            kill(getpid(), SIGWINCH)
            var iterator = signals.makeAsyncIterator()
            #expect(await iterator.next() == .windowSizeChanged)
            try await caller.call(for: loop) { watcher.close() }.get()
        }
    }

    @Test("StandardStreams.open wraps an inherited descriptor from every caller, and closing closes it",
          arguments: EntryPointCaller.allCases)
    func standardStreamsFromEveryCaller(_ caller: EntryPointCaller) async throws {
        try await withCountedLoop("anyThread.standardStreams") { loop in
            var ends: [Int32] = [0, 0]
            // Close-on-exec: a child spawned meanwhile by another test must not keep an end open.
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
            let readEnd = ends[0]
            let stream = try await caller.call(for: loop) { try StandardStreams.open(descriptor: readEnd, on: loop) }
            #expect(write(ends[1], "hi", 2) == 2)
            #expect(try await stream.read().get() == Array("hi".utf8))
            try await caller.call(for: loop) { stream.close() }.get()
            // The stream closed its end: the other end reads the end of the stream.
            var byte: UInt8 = 0
            #expect(read(ends[1], &byte, 1) == 0)
            close(ends[1])
        }
    }

    @Test("the async forms work from a detached task and from a task on the loop, leaving no handle")
    func asyncFormsFromTasks() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        try await withCountedLoop("anyThread.systemAsync") { loop in
            for onTheLoop in [false, true] {
                let opened: @Sendable () async throws -> (ChildProcess, PathWatcher, SignalWatcher) = {
                    let child = try await ChildProcess.spawnAsync("/bin/true", on: loop)
                    let watcher = try await PathWatcher.watchAsync(folder.path, on: loop)
                    let signals = try await SignalWatcher.watchAsync([.windowSizeChanged], on: loop)
                    return (child, watcher, signals)
                }
                let (child, watcher, signals) = onTheLoop
                    ? try await Task(executorPreference: loop) { try await opened() }.value
                    : try await Task.detached { try await opened() }.value
                #expect(try await child.exit.get().isSuccess)
                try await watcher.close().get()
                try await signals.close().get()
                #expect(openDescriptorCount(inside: folder.path) == 0)
            }
            await #expect(throws: EventLoopError.self) {
                _ = try await ChildProcess.spawnAsync(folder.file("missing"), on: loop)
            }
            var ends: [Int32] = [0, 0]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
            let readEnd = ends[0]
            let stream = try await Task.detached { try await StandardStreams.openAsync(descriptor: readEnd, on: loop) }.value
            #expect(write(ends[1], "hi", 2) == 2)
            #expect(try await stream.read().get() == Array("hi".utf8))
            try await stream.close().get()
            close(ends[1])
        }
    }
}
