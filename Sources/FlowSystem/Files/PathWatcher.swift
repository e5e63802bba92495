import CLibUV
import Flow
import FlowNet

/// Watches a file or a directory for changes (libuv's `uv_fs_event`, inotify on Linux): each change is
/// handed to a handler on the loop and to every ``changes`` sequence.
///
/// ```swift
/// let watcher = try PathWatcher.watch("/etc/app", on: .main) { change in
///     print("\(change.name ?? "?") changed")   // config.json changed
/// }
/// ```
///
/// A watcher stays open until ``close()``, and keeps its loop running unless made with
/// `keepsLoopAlive: false`.
///
/// One write to a file often gives several changes (`echo hi > file` gives two content changes: the
/// truncation and the write). With `coalescing:`, changes of the same entry within that many seconds
/// are merged into one, delivered at the end of the interval:
///
/// ```swift
/// let watcher = try PathWatcher.watch(folder, coalescing: 0.05) { change in restartChild() }   // once per write
/// ```
public final class PathWatcher: @unchecked Sendable {
    // @unchecked Sendable: the handle, `handler` and `isOpen` are used only in the loop's context
    // (`watch` runs on the loop, `close()` hops there), as is `closing`; `changeStreams` locks itself.

    /// A change libuv saw.
    public struct Change: Sendable, Hashable {
        /// The name of the entry that changed, inside a watched directory, or the watched file's name.
        public let name: String?
        /// Whether an entry appeared, disappeared or was renamed (otherwise its content changed).
        public let isRename: Bool
        /// Whether the content or the attributes changed.
        public let isContentChange: Bool
    }

    /// The loop the changes are delivered on.
    public let loop: EventLoop
    /// The path watched.
    public let path: String

    private let handle: UnsafeMutablePointer<uv_fs_event_t>
    private var handler: ((Change) -> Void)?
    private let closing = HandleClosing()
    private let changeStreams = ContinuationFanOut<Change>()
    /// Seconds over which changes of the same entry are merged; nil: each is delivered at once.
    private let coalescing: Double?
    /// The changes being merged, by entry name, in the order first seen. Loop context only.
    private var pendingChanges: [Change] = []
    private var flushTimer: Disposable?

    private init(
        loop: EventLoop, path: String, handle: UnsafeMutablePointer<uv_fs_event_t>, coalescing: Double?,
        handler: ((Change) -> Void)?
    ) {
        self.loop = loop
        self.path = path
        self.handle = handle
        self.coalescing = coalescing
        self.handler = handler
    }

    /// Starts watching `path`, a file or a directory (not its subdirectories). Callable from any
    /// thread: off the loop it starts watching on the loop and waits for it; from async code use
    /// ``watchAsync(_:keepsLoopAlive:coalescing:on:handler:)-(_,_,_,EventLoop,_)``, which never blocks. The handler runs on
    /// the loop.
    ///
    /// ```swift
    /// let watcher = try PathWatcher.watch(folder) { change in reload(change.name) }
    /// ```
    ///
    /// - Parameters:
    ///   - path: the file or directory.
    ///   - keepsLoopAlive: whether the open watcher keeps `EventLoop.run()` from returning, as for
    ///     `SignalWatcher`.
    ///   - coalescing: seconds over which changes of the same entry are merged into one (renames and
    ///     content changes together), delivered at the end of the interval; `nil` (the default)
    ///     delivers each change at once. Changes still being merged when the watcher closes are dropped.
    ///   - loop: the loop the changes are delivered on.
    ///   - handler: runs on the loop with each change.
    /// - Throws: libuv's error, `ENOENT: no such file or directory` when nothing is at `path`;
    ///   `EINVAL: invalid argument` for a path holding a NUL byte or a negative or non-finite
    ///   `coalescing`.
    public static func watch(
        _ path: String, keepsLoopAlive: Bool = true, coalescing: Double? = nil, on loop: EventLoop = .main,
        handler: ((Change) -> Void)? = nil
    ) throws(EventLoopError) -> PathWatcher {
        try loop.performAndWait("PathWatcher.watch") { () throws(EventLoopError) in
            try watchOnLoop(path, keepsLoopAlive: keepsLoopAlive, coalescing: coalescing, on: loop, handler: handler)
        }
    }

    /// Starts watching `path` like ``watch(_:keepsLoopAlive:coalescing:on:handler:)``, from async code: the task waits for the
    /// loop without blocking a thread. Named apart from the synchronous form, which async callers
    /// without `await` keep.
    ///
    /// ```swift
    /// let watcher = try await PathWatcher.watchAsync(folder, on: loop) { change in print(change) }
    /// ```
    public nonisolated(nonsending) static func watchAsync(
        _ path: String, keepsLoopAlive: Bool = true, coalescing: Double? = nil, on loop: EventLoop = .main,
        handler: (@Sendable (Change) -> Void)? = nil
    ) async throws(EventLoopError) -> PathWatcher {
        try await loop.perform("PathWatcher.watchAsync") { () throws(EventLoopError) in
            try watchOnLoop(path, keepsLoopAlive: keepsLoopAlive, coalescing: coalescing, on: loop, handler: handler)
        }
    }

    private static func watchOnLoop(
        _ path: String, keepsLoopAlive: Bool, coalescing: Double?, on loop: EventLoop, handler: ((Change) -> Void)?
    ) throws(EventLoopError) -> PathWatcher {
        // C would watch the path only up to a NUL byte: another file.
        guard path.isWholeCString else { throw EventLoop.error(UV_EINVAL.rawValue) }
        if let coalescing, !(coalescing >= 0 && coalescing.isFinite) { throw EventLoop.error(UV_EINVAL.rawValue) }
        let handle = UnsafeMutablePointer<uv_fs_event_t>.allocate(capacity: 1)
        let status = uv_fs_event_init(loop.unsafeLoopPointer, handle)
        guard status == 0 else {
            handle.deallocate()
            throw EventLoop.error(status)
        }
        let watcher = PathWatcher(loop: loop, path: path, handle: handle, coalescing: coalescing, handler: handler)
        handle.pointee.data = Owner.retain(watcher)
        let started = uv_fs_event_start(handle, { handle, name, events, status in
            let watcher = Owner.borrow(handle?.pointee.data, as: PathWatcher.self)
            guard status == 0 else { return }
            watcher.receive(Change(
                name: name.map { String(cString: $0) },
                isRename: events & Int32(UV_RENAME.rawValue) != 0,
                isContentChange: events & Int32(UV_CHANGE.rawValue) != 0))
        }, path, 0)
        guard started == 0 else {
            watcher.beginClosing()
            throw EventLoop.error(started)
        }
        loop.nameHandle(handle, kind: .watcher, summary: "watcher of \(path)", creationSite: nil)
        if !keepsLoopAlive {
            uv_unref(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self))
        }
        loop.libuvStateDidChange()
        return watcher
    }

    /// The changes from now on, as an `AsyncSequence` that ends when the watcher closes. Callable from
    /// any thread.
    ///
    /// ```swift
    /// for await change in watcher.changes { print(change) }
    /// ```
    public var changes: AsyncStream<Change> {
        changeStreams.makeStream(bufferingNewest: 256).stream
    }

    /// A change from libuv: delivered now, or merged with the others of its entry until the
    /// coalescing interval ends.
    private func receive(_ change: Change) {
        guard let coalescing else { return deliver(change) }
        if let index = pendingChanges.firstIndex(where: { $0.name == change.name }) {
            let merged = pendingChanges[index]
            pendingChanges[index] = Change(
                name: change.name, isRename: merged.isRename || change.isRename,
                isContentChange: merged.isContentChange || change.isContentChange)
        } else {
            pendingChanges.append(change)
        }
        guard flushTimer == nil else { return }
        flushTimer = loop.execute(after: coalescing) { [self] in
            flushTimer = nil
            let changes = pendingChanges
            pendingChanges = []
            for change in changes { deliver(change) }
        }
    }

    private func deliver(_ change: Change) {
        guard closing.isOpen else { return }
        handler?(change)
        changeStreams.yield(change)
    }

    /// Stops watching; the ``changes`` sequences end, and the future completes once libuv has closed the
    /// handle. Callable from any thread.
    ///
    /// ```swift
    /// watcher.close()
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        closing.close(on: loop) { [self] in beginClosing() }
    }

    private func beginClosing() {
        guard closing.beginClosing() else { return }
        changeStreams.finish()
        flushTimer?.dispose()
        flushTimer = nil
        pendingChanges = []
        loop.forgetHandle(handle)
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            Owner.release(handle?.pointee.data, as: PathWatcher.self).didClose()
        }
        loop.libuvStateDidChange()
    }

    private func didClose() {
        handle.deallocate()
        handler = nil
        closing.didClose()
    }
}
