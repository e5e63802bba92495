import Flow
import FlowJobs
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A crash-test worker's store, passing every call to `base` and logging to the run's events what
/// decides when a dead worker's job runs again: each claim (sent, and answered with what it took, what
/// it rescued and when it said to wake), each lease a heartbeat extended, and each notification heard.
/// The verification prints them around a rerun that came later than its limit.
final class ClaimTracingStore: JobStore {
    let base: any JobStore
    let events: AppendLog
    let pid = getpid()

    init(_ base: any JobStore, events: AppendLog) {
        self.base = base
        self.events = events
    }

    var clock: JobClock { base.clock }

    func claim(_ request: ClaimRequest) -> Future<ClaimResult> {
        let sentAt = nowMilliseconds()
        let slots = request.slotsByQueue.values.reduce(0, +)
        return base.claim(request).onResult(on: .none) { [events, pid] result in
            switch result {
            case .success(let claim):
                let wake = claim.nextWakeAt.map { String(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? "-"
                events.append(
                    "claimed \(pid) \(sentAt) \(nowMilliseconds()) \(slots) \(claim.jobs.count) "
                        + "\(claim.rescued.map { String($0.id.rawValue) }.joined(separator: ",").nonEmpty ?? "-") \(wake)")
            case .failure:
                events.append("claimfailed \(pid) \(sentAt) \(nowMilliseconds())")
            }
        }
    }

    func heartbeat(_ lease: JobLease, leaseDuration: Duration) -> Future<HeartbeatResult> {
        base.heartbeat(lease, leaseDuration: leaseDuration).onValue(on: .none) { [events, pid] result in
            events.append(
                "heartbeat \(pid) \(lease.id.rawValue) \(nowMilliseconds()) "
                    + "\(Int64((result.leaseExpiresAt.timeIntervalSince1970 * 1000).rounded()))")
        }
    }

    func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable {
        base.observe { [events, pid] notification in
            let kind: String
            switch notification {
            case .enqueued(let queues): kind = "enqueued:" + queues.sorted().joined(separator: ",")
            case .cancellationRequested(let id): kind = "cancel:\(id.rawValue)"
            case .finished(let record): kind = "finished:\(record.id.rawValue)"
            case .committedElsewhere: kind = "elsewhere"
            }
            events.append("heard \(pid) \(nowMilliseconds()) \(kind)")
            observer(notification)
        }
    }

    func enqueue(_ jobs: [NewJob]) -> Future<[EnqueuedJob]> { base.enqueue(jobs) }

    func finish(
        _ lease: JobLease, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) -> Future<JobRecord> {
        base.finish(lease, outcome: outcome, effects: effects)
    }

    func release(_ lease: JobLease) -> Future<Void> { base.release(lease) }

    func recordFirstAttemptTrace(_ lease: JobLease, traceContext: [String: String]) -> Future<Void> {
        base.recordFirstAttemptTrace(lease, traceContext: traceContext)
    }

    func setConcurrencyLimit(_ maxRunning: Int?, forQueue queue: String) -> Future<Void> {
        base.setConcurrencyLimit(maxRunning, forQueue: queue)
    }

    func cancel(_ id: JobID) -> Future<JobCancellation> { base.cancel(id) }
    func job(_ id: JobID) -> Future<JobRecord?> { base.job(id) }

    func jobs(state: JobState?, queue: String?, limit: Int) -> Future<[JobRecord]> {
        base.jobs(state: state, queue: queue, limit: limit)
    }

    func transaction<Value: Sendable>(_ body: @escaping @Sendable (any JobTransaction) throws -> Value) -> Future<Value> {
        base.transaction(body)
    }

    func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> { base.fireSchedule(firing) }
    func schedules() -> Future<[ScheduleState]> { base.schedules() }

    func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?> {
        base.setSchedulePaused(isPaused, name: name)
    }
}

extension String {
    fileprivate var nonEmpty: String? { isEmpty ? nil : self }
}
