import Flow
import FlowJobs
import Foundation

extension PostgresJobStore {
    /// Makes a waiting job (scheduled, available or retryable) due now, its run time brought forward
    /// and never put back, and wakes the idle workers of its queue in every process as an enqueue
    /// does: the commit sends the queue's `NOTIFY`. What `flow-jobs retry` does to a job that waits.
    ///
    /// - Returns: whether the job was waiting; `false` when it is running, finished or unknown (a
    ///   worker may have claimed it since the caller read it).
    package func makeDueNow(_ id: JobID) -> Future<Bool> {
        let statements = statements
        return inTransaction { session, now in
            let rows = try session.rows(
                "UPDATE flow_jobs SET run_at = least(run_at, $1) "
                    + "WHERE id = $2 AND state IN \(Statements.claimableStates) RETURNING queue",
                [.integer(now), .integer(id.rawValue)])
            guard let queue = rows.first?.first?.textValue else { return false }
            session.pendingNotifications.append(.enqueued(queues: [queue]))
            try statements.notifyOtherProcesses(session)
            return true
        }
    }
}
