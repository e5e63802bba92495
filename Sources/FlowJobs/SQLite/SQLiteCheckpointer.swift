import CSQLite
import Dispatch
import Flow
import Synchronization

/// Copies a file store's write-ahead log back into the database file on a queue and connection of its
/// own, so that the writer's commits never wait for a checkpoint.
///
/// SQLite's automatic checkpoint runs inside the commit that makes the log pass its threshold: that
/// commit (and every request of its batch, and the claims queued behind it) waits while the pages are
/// copied and both files are synced. With this checkpointer, the writer's connection only reports the
/// log's size after each commit (``walDidGrow(toPages:)``); each time the log has grown by the
/// threshold, a passive checkpoint runs here, beside the writer (WAL lets the two run at once), and
/// the log starts over from its beginning at a later commit once a checkpoint has copied it all.
///
/// A writer that never pauses keeps this checkpoint from ever copying the whole log (each commit adds
/// to it meanwhile): checkpoints then run once per threshold of growth, not after every commit, and
/// the writer copies the rest itself once the log passes ``writerCatchUpPages`` (see
/// ``SQLiteWriter``), so that the log starts over and stays bounded.
final class SQLiteCheckpointer: Sendable {
    /// The log's growth, in pages, from which a checkpoint is started: SQLite's own default.
    static let thresholdPages: Int32 = 1000
    /// The log's size, in pages, from which the writer checkpoints between its batches.
    static let writerCatchUpPages: Int32 = 4 * thresholdPages

    /// The connection, `nil` once closed. Used only on `queue`.
    private let connection: Locked<SQLiteConnection?>
    private let queue = DispatchQueue(label: "flow.jobs.sqlite-checkpointer")
    /// Set while a checkpoint is queued or running: one at a time covers every commit before it.
    private let isScheduled = Atomic<Bool>(false)
    /// The log's size when the last checkpoint was started. Used only by the writer's thread.
    private let pagesAtLastCheckpoint = Atomic<Int32>(0)

    init(connection: sending SQLiteConnection) {
        self.connection = Locked(connection)
    }

    /// Called by the writer's connection after each commit, with the log's size in pages.
    func walDidGrow(toPages pages: Int32) {
        // A log smaller than at the last checkpoint has started over.
        let pagesAtLast = min(pagesAtLastCheckpoint.load(ordering: .relaxed), pages)
        guard pages - pagesAtLast >= Self.thresholdPages,
            !isScheduled.exchange(true, ordering: .acquiringAndReleasing)
        else {
            pagesAtLastCheckpoint.store(pagesAtLast, ordering: .relaxed)
            return
        }
        pagesAtLastCheckpoint.store(pages, ordering: .relaxed)
        queue.async { [self] in
            connection.withLock { connection in
                // Passive: copies what no reader still needs and never waits for a lock; a checkpoint
                // that meets one is simply started again by a later commit.
                guard let handle = connection?.handle else { return }
                _ = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
            isScheduled.store(false, ordering: .releasing)
        }
    }

    /// Closes the connection once a checkpoint already queued has run; then calls `whenClosed`.
    func close(whenClosed: @escaping @Sendable () -> Void = {}) {
        queue.async { [self] in
            _ = connection.withLock { $0.take() }
            whenClosed()
        }
    }
}
