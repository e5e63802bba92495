import Foundation
import Glibc
import Synchronization

/// Watches a database's files with inotify, on a thread of its own blocked in `read`, and calls
/// `onChange` after each burst of writes to them: no timer, no polling. Writes that come while
/// `onChange` runs are coalesced into one more call.
///
/// The writes of this process's own connections are seen as well; the caller tells them apart
/// (``SQLiteWriter`` compares `PRAGMA data_version`, which only another connection's commit changes).
final class SQLiteFileWatcher: Sendable {
    private struct State {
        /// Set by ``stop()``.
        var isStopped = false
        /// Set by the thread once it has closed the descriptor.
        var isClosed = false
    }

    private let descriptor: Int32
    private let watches: [Int32]
    private let state = Synchronization.Mutex(State())

    /// Starts watching those of `paths` that exist; `nil` when none could be watched.
    init?(paths: [String], onChange: @escaping @Sendable () -> Void) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        let watches = paths.map { inotify_add_watch(descriptor, $0, UInt32(IN_MODIFY)) }.filter { $0 >= 0 }
        guard !watches.isEmpty else {
            Glibc.close(descriptor)
            return nil
        }
        self.descriptor = descriptor
        self.watches = watches
        let thread = Thread { [self] in watch(onChange) }
        thread.name = "flow.jobs.sqlite-watcher"
        thread.start()
    }

    /// Stops watching; the thread closes the descriptor and ends. Calls after the first do nothing.
    func stop() {
        state.withLock { state in
            guard !state.isStopped else { return }
            state.isStopped = true
            guard !state.isClosed else { return }
            // Removing a watch queues an IN_IGNORED event, which ends the thread's read.
            for watch in watches { inotify_rm_watch(descriptor, watch) }
        }
    }

    private func watch(_ onChange: @Sendable () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            // Under the lock, so that stop() has removed its watches before the descriptor closes.
            let failed = count < 0 && errno != EINTR
            let ends = state.withLock { state in
                guard state.isStopped || failed else { return false }
                Glibc.close(descriptor)
                state.isClosed = true
                return true
            }
            if ends { return }
            if count > 0 { onChange() }
        }
    }
}
