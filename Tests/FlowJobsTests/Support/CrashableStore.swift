import Flow
import FlowJobs
import Foundation
import Synchronization

/// A store that forwards to another until it "crashes": from then on it forwards nothing, as if the
/// process had died, and every later call's future never completes. `decide` says, per call, whether
/// to crash before forwarding it (`.before`), after it committed (`.after`), or not at all.
final class CrashableStore: JobStore {
    enum Call: Sendable {
        case enqueue, claim, heartbeat(JobLease), finish(JobLease), release(JobLease), fireSchedule(ScheduleFiring)
        case other
    }

    enum Decision: Sendable {
        case forward, crashBefore, crashAfterCommit
    }

    let base: any JobStore
    private let decide: Synchronization.Mutex<@Sendable (Call, ClaimResult?) -> Decision>
    private let crashed = Synchronization.Mutex(false)
    private let onCrash = Synchronization.Mutex<(@Sendable () -> Void)?>(nil)

    init(base: any JobStore, decide: @escaping @Sendable (Call, ClaimResult?) -> Decision) {
        self.base = base
        self.decide = Synchronization.Mutex(decide)
    }

    var clock: JobClock { base.clock }
    var hasCrashed: Bool { crashed.withLock { $0 } }

    /// What to run at the crash (the worker's `simulateCrash`). It runs once and is let go then: it
    /// usually holds the worker, which holds this store.
    func whenCrashing(_ body: @escaping @Sendable () -> Void) { onCrash.withLock { $0 = body } }

    /// Crashes now.
    func crash() {
        let first = crashed.withLock { wasCrashed in
            defer { wasCrashed = true }
            return !wasCrashed
        }
        guard first else { return }
        let body = onCrash.withLock { body in
            defer { body = nil }
            return body
        }
        body?()
    }

    private func pass<Value>(_ call: Call, _ forward: () -> Future<Value>) -> Future<Value> {
        guard !hasCrashed else { return Future(.forever) }
        switch decide.withLock({ $0 })(call, nil) {
        case .forward:
            return forward()
        case .crashBefore:
            crash()
            return Future(.forever)
        case .crashAfterCommit:
            _ = forward()
            crash()
            return Future(.forever)
        }
    }

    func enqueue(_ jobs: [NewJob]) -> Future<[EnqueuedJob]> { pass(.enqueue) { base.enqueue(jobs) } }

    func claim(_ request: ClaimRequest) -> Future<ClaimResult> {
        guard !hasCrashed else { return Future(.forever) }
        let claimed = base.claim(request)
        // Calling-thread stores complete at once: look at what the claim took before handing it on.
        let result = Synchronization.Mutex<ClaimResult?>(nil)
        claimed.onValue(on: .none) { value in result.withLock { $0 = value } }
        if let value = result.withLock({ $0 }), case .crashAfterCommit = decide.withLock({ $0 })(.claim, value) {
            crash()
            return Future(.forever)
        }
        return claimed
    }

    func heartbeat(_ lease: JobLease, leaseDuration: Duration) -> Future<HeartbeatResult> {
        pass(.heartbeat(lease)) { base.heartbeat(lease, leaseDuration: leaseDuration) }
    }

    func finish(
        _ lease: JobLease, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) -> Future<JobRecord> {
        pass(.finish(lease)) { base.finish(lease, outcome: outcome, effects: effects) }
    }

    func release(_ lease: JobLease) -> Future<Void> { pass(.release(lease)) { base.release(lease) } }
    func cancel(_ id: JobID) -> Future<JobCancellation> { pass(.other) { base.cancel(id) } }

    func setConcurrencyLimit(_ maxRunning: Int?, forQueue queue: String) -> Future<Void> {
        pass(.other) { base.setConcurrencyLimit(maxRunning, forQueue: queue) }
    }
    func job(_ id: JobID) -> Future<JobRecord?> { pass(.other) { base.job(id) } }

    func jobs(state: JobState?, queue: String?, limit: Int) -> Future<[JobRecord]> {
        pass(.other) { base.jobs(state: state, queue: queue, limit: limit) }
    }

    func transaction<Value: Sendable>(_ body: @escaping @Sendable (any JobTransaction) throws -> Value) -> Future<Value> {
        pass(.other) { base.transaction(body) }
    }

    func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult> {
        pass(.fireSchedule(firing)) { base.fireSchedule(firing) }
    }

    func schedules() -> Future<[ScheduleState]> { pass(.other) { base.schedules() } }

    func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?> {
        pass(.other) { base.setSchedulePaused(isPaused, name: name) }
    }

    func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable {
        base.observe { [weak self] notification in
            if self?.hasCrashed == false { observer(notification) }
        }
    }
}
