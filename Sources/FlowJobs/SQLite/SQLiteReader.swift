import Dispatch
import Flow
import FlowTimers
import Synchronization

/// The read connection of a file store: `job`, `jobs` and counts run here, beside the writer, so
/// that they never wait behind its transactions (WAL lets a reader see the last commit while the
/// writer holds the write lock).
///
/// With ``SQLiteJobStore/Execution/writerThread`` reads run one after another on a serial queue of
/// their own; with ``SQLiteJobStore/Execution/callingThread`` each runs at once on the calling thread.
/// Every read is one statement, so it sees one committed state of the database.
final class SQLiteReader: Sendable {
    /// The connection, `nil` once closed. Locked for a whole read, so it is used by one thread at a time.
    private let connection: Locked<SQLiteConnection?>
    /// Where reads run, or `nil` for the calling thread.
    private let queue: DispatchQueue?
    private let busyRetryLimit: Int
    private let busyBackoff: Backoff

    init(connection: sending SQLiteConnection, usesOwnQueue: Bool, busyRetryLimit: Int, busyBackoff: Backoff) {
        self.connection = Locked(connection)
        queue = usesOwnQueue ? DispatchQueue(label: "flow.jobs.sqlite-reader") : nil
        self.busyRetryLimit = busyRetryLimit
        self.busyBackoff = busyBackoff
    }

    /// Runs `work` on the read connection; the future completes with its result.
    func read<Value: Sendable>(
        _ work: @escaping @Sendable (SQLiteConnection) throws(JobStoreError) -> Value
    ) -> Future<Value> {
        Future<Value>(on: .none) { [self] completion in
            if let queue {
                queue.async { completion(self.run(work).mapError { $0 }) }
            } else {
                completion(run(work).mapError { $0 })
            }
            return NilDisposer()
        }
    }

    private func run<Value: Sendable>(
        _ work: @Sendable (SQLiteConnection) throws(JobStoreError) -> Value
    ) -> Swift.Result<Value, JobStoreError> {
        connection.withLock { connection -> Swift.Result<Value, JobStoreError> in
            guard let connection else { return .failure(.closed) }
            var value: Value?
            do throws(JobStoreError) {
                // A reader meets SQLITE_BUSY only in WAL's rare recovery moments: waited out like the writer.
                try SQLiteWriter.withBusyRetry(limit: busyRetryLimit, backoff: busyBackoff, onRetry: nil) {
                    () throws(JobStoreError) in value = try work(connection)
                }
            } catch {
                return .failure(error)
            }
            guard let value else { return .failure(.closed) }
            return .success(value)
        }
    }

    /// Closes the connection once the reads already submitted have run; then calls `whenClosed`.
    func close(whenClosed: @escaping @Sendable () -> Void = {}) {
        let closeNow: @Sendable () -> Void = { [self] in
            _ = connection.withLock { $0.take() }
            whenClosed()
        }
        if let queue { queue.async(execute: closeNow) } else { closeNow() }
    }
}
