import Flow
import FlowJobs

extension PostgresJobStore {
    /// A completion waiting to be written, with the future's completion that reports it.
    struct WaitingCompletion: Sendable {
        let lease: JobLease
        let completion: @Sendable (Result<JobRecord>) -> Void
    }

    /// The completions that wait for the next batch, and whether a batch is being written.
    struct CompletionBatches: Sendable {
        var waiting: [WaitingCompletion] = []
        var isWriting = false
    }

    /// The most completions one statement writes.
    static let maxCompletionsPerBatch = 500

    /// Completes the attempt of `lease` (no effects) in a batch: the completions that arrive while
    /// the previous batch is being written are written together, in one statement and one commit.
    /// Its future fails with `JobStoreError/leaseLost(_:)` when the job is no longer running under
    /// the lease's fence, and with the batch's error when its statement failed (the batch may then
    /// have committed or not, as for any change whose connection was lost).
    func completeInBatch(_ lease: JobLease) -> Future<JobRecord> {
        Future(on: .none) { [self] completion in
            let startsWriting = completionBatches.withLock { batches -> Bool in
                batches.waiting.append(WaitingCompletion(lease: lease, completion: completion))
                guard !batches.isWriting else { return false }
                batches.isWriting = true
                return true
            }
            if startsWriting { writeCompletionBatch() }
            return NilDisposer()
        }
    }

    /// Writes the waiting completions, then the ones that arrived meanwhile, until none waits.
    private func writeCompletionBatch() {
        let statements = statements
        let clock = clock
        let batches = completionBatches
        // The batch is taken once a connection is free, so that it holds every completion that
        // arrived while the connection was busy.
        let taken = Locked<[WaitingCompletion]>([])
        pool.withConnection { connection -> Future<PostgresResult> in
            let batch = batches.withLock { batches in
                let batch = Array(batches.waiting.prefix(Self.maxCompletionsPerBatch))
                batches.waiting.removeFirst(batch.count)
                return batch
            }
            taken.withLock { $0 = batch }
            let (sql, arguments) = statements.completeInOneStatement(
                batch.map(\.lease), now: clock.now().milliseconds)
            return connection.query(sql, arguments, prepared: true)
        }.onResult(on: .none) { [weak self] result in
            // A failure to get a connection fails the completions waiting then (the pool's error).
            var batch = taken.withLock { $0 }
            if batch.isEmpty, case .failure = result {
                batch = batches.withLock { batches in
                    defer { batches.waiting.removeAll() }
                    return batches.waiting
                }
            }
            switch result {
            case .success(let written):
                let completed = written.rows.map(StoredJobRow.record)
                self?.publish(completed.sorted { $0.id < $1.id }.map(JobStoreNotification.finished))
                // Each completed job answers the first completion of its lease; a stale lease of the
                // same job, or the same lease asked for twice, was not what completed it.
                var records = Dictionary(
                    completed.map { (JobLease(id: $0.id, fence: $0.fence), $0) },
                    uniquingKeysWith: { first, _ in first })
                for waiting in batch {
                    if let record = records.removeValue(forKey: waiting.lease) {
                        waiting.completion(.success(record))
                    } else {
                        waiting.completion(.failure(JobStoreError.leaseLost(waiting.lease)))
                    }
                }
            case .failure(let error):
                for waiting in batch { waiting.completion(.failure(error)) }
            }
            let writesAgain = batches.withLock { batches -> Bool in
                guard !batches.waiting.isEmpty else {
                    batches.isWriting = false
                    return false
                }
                return true
            }
            if writesAgain {
                if let self {
                    self.writeCompletionBatch()
                } else {
                    let orphaned = batches.withLock { batches in
                        defer { batches.waiting.removeAll() }
                        return batches.waiting
                    }
                    for waiting in orphaned { waiting.completion(.failure(PostgresError.closed)) }
                }
            }
        }
    }
}
