import Flow
import Foundation
import Glibc
import Synchronization

/// Watches a database's files with inotify, on a thread of its own that sleeps in `poll` with no
/// timeout while nothing is written, and calls `onChange` after each burst of writes to them (and
/// twice more shortly after it): no timer and no polling while idle. Writes that come while
/// `onChange` runs are coalesced into one more call.
///
/// The writes of this process's own connections are seen as well; the caller tells them apart
/// (``SQLiteWriter`` compares `PRAGMA data_version`, which only another connection's commit changes).
final class SQLiteFileWatcher: Sendable {
    private struct State {
        /// Set by ``stop()``.
        var isStopped = false
        /// Set by the thread once it has closed its descriptors.
        var isClosed = false
    }

    /// The inotify descriptor.
    private let descriptor: Int32
    /// A pipe whose write end ``stop()`` writes to, ending the thread's wait on its read end.
    private let stopPipe: (read: Int32, write: Int32)
    private let state = Locked(State())

    /// Starts watching those of `paths` that exist; `nil` when none could be watched.
    init?(paths: [String], onChange: @escaping @Sendable () -> Void) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC))
        guard descriptor >= 0 else { return nil }
        let watches = paths.map { inotify_add_watch(descriptor, $0, UInt32(IN_MODIFY)) }.filter { $0 >= 0 }
        var pipeEnds: [Int32] = [-1, -1]
        guard !watches.isEmpty, pipe(&pipeEnds) == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.descriptor = descriptor
        self.stopPipe = (pipeEnds[0], pipeEnds[1])
        let thread = Thread { [self] in watch(onChange) }
        thread.name = "flow.jobs.sqlite-watcher"
        thread.start()
    }

    /// Stops watching; the thread closes its descriptors and ends. Calls after the first do nothing.
    func stop() {
        state.withLock { state in
            guard !state.isStopped else { return }
            state.isStopped = true
            guard !state.isClosed else { return }
            var byte: UInt8 = 1
            _ = write(stopPipe.write, &byte, 1)
        }
    }

    private func watch(_ onChange: @Sendable () -> Void) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var descriptors = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0),
        ]
        // A commit writes the -wal file, then publishes itself in the -shm index, which inotify does
        // not see: a check at the write may come too early. So each burst is checked at once, then
        // again 1 ms and 10 ms later (unless more writes come first); after that the thread sleeps
        // until the next write. While writes keep coming (this process's own writer commits too),
        // they are read and checked at most once a millisecond, not once each: a check per commit
        // would wake this thread and the writer's for every commit.
        var followUps: ArraySlice<Int32> = []
        while true {
            let ready = poll(&descriptors, 2, followUps.first ?? -1)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 {
                followUps.removeFirst()
                onChange()
                continue
            }
            guard ready > 0, descriptors[1].revents == 0, descriptors[0].revents == Int16(POLLIN) else { break }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                onChange()
                usleep(1000)
                // After the pause: writes that came meanwhile are read and checked at once; with
                // none, this is the check 1 ms after the burst.
                followUps = [0, 10]
            } else if count < 0 && errno != EINTR {
                break
            }
        }
        // Under the lock, so that stop() never writes to a closed descriptor.
        state.withLock { state in
            Glibc.close(descriptor)
            Glibc.close(stopPipe.read)
            Glibc.close(stopPipe.write)
            state.isClosed = true
        }
    }
}
