import Flow
import FlowSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif
import Testing

/// What FlowSystem's handles tell `EventLoop.activeResources()` while open, and that each is gone once
/// closed (or, for a child process, once it exited).
@Suite("FlowSystem handles in the loop's resources")
struct SystemResourceTests {
    @Test("a signal watcher, a path watcher and a child process are listed while open, and gone once closed or exited")
    func watchersAndChildProcesses() async throws {
        let folder = NSTemporaryDirectory() + "flow-system-resources-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let loop = EventLoop.startOnNewThread(name: "resources.system")
        defer { loop.shutdown() }
        func named() -> [LoopResource] {
            loop.activeResources().filter { [.watcher, .childProcess, .connection].contains($0.kind) }
        }
        #expect(named().isEmpty)

        let signals = try SignalWatcher.watch([.hangUp], on: loop)
        #expect(named() == [LoopResource(kind: .watcher, summary: "watcher of SIGHUP")])
        try await signals.close().get()
        #expect(named().isEmpty)

        let paths = try PathWatcher.watch(folder, on: loop)
        #expect(named() == [LoopResource(kind: .watcher, summary: "watcher of \(folder)")])
        try await paths.close().get()
        #expect(named().isEmpty)

        let child = try ChildProcess.spawn("/bin/sleep", arguments: ["30"], on: loop)
        #expect(named() == [LoopResource(kind: .childProcess, summary: "child process \(child.processIdentifier) (/bin/sleep)")])
        try await child.kill().get()
        _ = try await child.exit.get()
        #expect(named().isEmpty, "\(named())")

        let piped = try ChildProcess.spawn("/bin/cat", standardInput: .pipe, standardOutput: .pipe, on: loop)
        piped.standardOutput?.onRead { _ in }
        let pid = piped.processIdentifier
        // Every open connection is listed, the standard input nobody reads included.
        #expect(Set(named()) == [
            LoopResource(kind: .childProcess, summary: "child process \(pid) (/bin/cat)"),
            LoopResource(kind: .connection, summary: "standard output of child process \(pid)"),
            LoopResource(kind: .connection, summary: "standard input of child process \(pid)"),
        ])
        try await piped.standardInput!.close().get()
        _ = try await piped.exit.get()
        try await piped.standardOutput!.close().get()
        #expect(named().isEmpty, "\(named())")
    }

    @Test("a path watcher made with keepsLoopAlive: false does not keep the loop running")
    func pathWatcherThatDoesNotKeepTheLoopAlive() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let loop = EventLoop.startOnNewThread(name: "resources.unref")
        defer { loop.shutdown() }
        let watcher = try PathWatcher.watch(folder.path, keepsLoopAlive: false, on: loop)
        #expect(!loop.activeResources().contains { $0.kind == .watcher })
        try await watcher.close().get()
    }

    @Test("a negative or non-finite coalescing interval throws EINVAL")
    func badCoalescingInterval() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        withLoopOnOwnThread(name: "watch.badCoalescing") { loop in
            for interval in [-1, Double.infinity, Double.nan] {
                #expect(throws: EventLoopError.self) { try PathWatcher.watch(folder.path, coalescing: interval, on: loop) }
            }
        }
    }

    @Test("with coalescing, two writes to a file in quick succession are delivered as one change")
    func coalescedChanges() async throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let path = folder.file("config")
        _ = FileManager.default.createFile(atPath: path, contents: Data())
        let loop = EventLoop.startOnNewThread(name: "watch.coalescing")
        defer { loop.shutdown() }
        let (changes, delivery) = AsyncStream<PathWatcher.Change>.makeStream()
        // A generous interval: both writes land in it however slow the machine.
        let watcher = try PathWatcher.watch(folder.path, coalescing: 0.5, on: loop) { delivery.yield($0) }
        for text in ["one\n", "two\n"] {
            let fd = open(path, O_WRONLY | O_TRUNC)
            _ = text.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        var seen: [PathWatcher.Change] = []
        var wroteMarker = false
        for await change in changes {
            seen.append(change)
            if change.name == "config", !wroteMarker {
                // The merged change came; a later file shows whether another change of "config" follows.
                wroteMarker = true
                _ = FileManager.default.createFile(atPath: folder.file("marker"), contents: Data())
            }
            if change.name == "marker" { break }
        }
        let config = seen.filter { $0.name == "config" }
        #expect(config.count == 1, "\(seen)")
        #expect(config.first?.isContentChange == true)
        try await watcher.close().get()
    }
}
