import Dispatch
import Flow
import FlowJobs
import FlowJobsPostgres
import FlowTestSupport
import FlowTesting
import Foundation
import Synchronization
import Testing

@Suite("PostgresJobStore: a dead worker's lease on the virtual clock", .enabled(if: PostgresTestDatabase.runsTests))
struct PostgresLeaseRescueTests {
    /// The dead worker's claim sends no notification and the stores have no safety poll, so the idle
    /// worker learns of the job only from its own claim's answer: the end of the other worker's lease,
    /// for which it arms its one timer. Time is the virtual clock's: the server sees the store clocks'
    /// times, and nothing but the timer moves the worker.
    @Test func anIdleWorkerInAnotherStoreRunsADeadWorkersJobWithinTheLeasePlusASecond() throws {
        let jobs = VirtualJobs()
        let schema = PostgresTestDatabase.freshSchema()
        let deadStore = try PostgresTestDatabase.openStore(clock: jobs.jobClock, schema: schema)
        let idleStore = try PostgresTestDatabase.openStore(clock: jobs.jobClock, schema: schema)
        defer {
            deadStore.close()
            idleStore.close()
        }
        let kind = JobKind<String>(name: "task")
        let handle = try wait(JobClient(store: deadStore).enqueue(kind, "orphaned"))
        let lease = Duration.seconds(2)
        let claimed = try wait(deadStore.claim(
            ClaimRequest(slotsByQueue: ["default": 1], names: ["task"], worker: "dead", leaseDuration: lease, maxLeaseExpiries: 3)))
        try #require(claimed.jobs.map(\.id) == [handle.id], "the dead worker held the job")
        let leaseEnd = jobs.elapsedSeconds + lease.seconds

        let started = Synchronization.Mutex<[Double]>([])
        let worker = JobWorker(
            store: idleStore, scheduler: jobs.scheduler,
            configuration: .init(concurrencyByQueue: ["default": 1], leaseDuration: lease, identity: "idle"))
        worker.register(kind) { _, _ in
            started.withLock { $0.append(jobs.elapsedSeconds) }
            return Future(())
        }
        worker.start()
        defer {
            // Its end runs on the virtual clock: left pending there, the worker and the clock's
            // queued work would hold each other (and the idle store) for good.
            let shutDown = worker.shutdown(gracePeriod: .zero)
            try? pump(jobs, until: { shutDown.result != nil }, "the worker's shutdown")
        }

        // The first claim's answer arrives from the server's loop: the worker arms its wake-up timer.
        try pump(jobs, until: { jobs.clock.nextDueTime != nil }, "the idle worker's first claim answered")
        #expect(started.withLock { $0 }.isEmpty, "nothing to run before the lease ends")
        let wakeAt = try #require(jobs.clock.nextDueTime).seconds
        #expect(wakeAt <= leaseEnd + 0.001, "the idle worker wakes for the other worker's lease end, at \(wakeAt) s")

        jobs.clock.advance(to: .seconds(leaseEnd))
        try pump(jobs, until: { !started.withLock { $0 }.isEmpty }, "the idle worker ran the rescued job")
        let rerun = try #require(started.withLock { $0 }.first)
        #expect(rerun >= leaseEnd && rerun <= leaseEnd + 1, "ran again at \(rerun) s, the lease ended at \(leaseEnd) s")
        let record = try #require(try wait(idleStore.job(handle.id)))
        #expect(record.worker == "idle" && record.lifecycle.leaseExpiries == 1)
    }

    /// Runs what the virtual scheduler holds until `condition`, waiting between rounds for the
    /// server's answers (which arrive on the store's loop, not on the clock) and moving the clock a
    /// millisecond a round: a claim answered after the clock reached its wake-up time arms the next
    /// wake-up at least a millisecond later. The worker wakes its lookahead before the lease's end
    /// (a wake-up time does not say whether it is a run time or a lease's end), that claim finds the
    /// lease running, and its answer arrives once the clock stands at the lease's end: the claim
    /// that rescues is the next one, a millisecond on. Fails after the hang guard.
    private func pump(_ jobs: VirtualJobs, until condition: () -> Bool, _ what: String) throws {
        let deadline = DispatchTime.now() + hangGuard
        while !condition() {
            jobs.clock.advance(by: .milliseconds(1))
            if condition() { return }
            guard DispatchTime.now() < deadline else {
                Issue.record("timed out waiting: \(what)")
                throw WaitTimedOut()
            }
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(5))
        }
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
