import Flow
import FlowJobs
import Foundation
import Synchronization
import Testing

/// Where the first process dies.
enum CrashPoint: String, CaseIterable, Sendable {
    /// The claim of the target job committed; the worker never saw its answer.
    case rightAfterAClaimCommits
    /// The target's handler started its external effect, then the process died.
    case insideAHandler
    /// The handler wrote its external effect and succeeded; the completion (with its transactional
    /// effect) never committed.
    case afterTheEffectBeforeTheCompletionCommits
    /// The process died as it sent the target's first heartbeat.
    case duringAHeartbeat
    /// A graceful shutdown ran out of time, and the process died as it gave the target back.
    case duringTheDrain
}

/// What the handlers did, kept outside the database like a file the job appends to.
private final class ExternalEffects: Sendable {
    private let lines = Synchronization.Mutex<[JobID: Int]>([:])
    private let startedAt = Synchronization.Mutex<[JobID: [Double]]>([:])

    func append(_ id: JobID, at time: Double) {
        lines.withLock { $0[id, default: 0] += 1 }
        startedAt.withLock { $0[id, default: []].append(time) }
    }

    func count(_ id: JobID) -> Int { lines.withLock { $0[id, default: 0] } }
    func starts(_ id: JobID) -> [Double] { startedAt.withLock { $0[id, default: []] } }
}

private struct Work: Codable, Sendable {
    var index: Int
    /// Attempts that fail before one succeeds.
    var failures: Int
}

private let work = JobKind<Work>(name: "work", maxAttempts: 6, backoff: .constant(3))

@Suite("Crash scenarios in process: drop all memory at a chosen point, reopen the store")
struct JobCrashTests {
    @Test(arguments: CrashPoint.allCases)
    func everyAcknowledgedJobEndsOnceWithItsEffectsExactlyOnce(_ point: CrashPoint) throws {
        let jobs = VirtualJobs()
        let external = ExternalEffects()
        let lease = Duration.seconds(15)
        let targetIndex = 2

        // The first process.
        let firstStore = try jobs.openStore()
        try completed(firstStore.transaction { transaction in
            try transaction.execute("CREATE TABLE effects (job INTEGER PRIMARY KEY, attempt INTEGER NOT NULL)", [])
        })
        let target = Synchronization.Mutex<JobID?>(nil)
        let isTarget: @Sendable (JobLease) -> Bool = { lease in target.withLock { $0 } == lease.id }
        let crashable = CrashableStore(base: firstStore) { call, claimed in
            switch (point, call) {
            case (.rightAfterAClaimCommits, .claim):
                let id = target.withLock { $0 }
                return claimed?.jobs.contains { $0.id == id } == true ? .crashAfterCommit : .forward
            case (.afterTheEffectBeforeTheCompletionCommits, .finish(let lease)) where isTarget(lease):
                return .crashBefore
            case (.duringAHeartbeat, .heartbeat(let lease)) where isTarget(lease):
                return .crashBefore
            case (.duringTheDrain, .release(let lease)) where isTarget(lease):
                return .crashBefore
            default:
                return .forward
            }
        }
        let client = JobClient(store: crashable)
        let firstWorker = JobWorker(
            store: crashable, scheduler: jobs.scheduler,
            configuration: .init(concurrencyByQueue: ["default": 3], leaseDuration: lease, identity: "first"))
        crashable.whenCrashing { firstWorker.simulateCrash() }
        firstWorker.register(work, handler: Self.handler(jobs: jobs, external: external) { context in
            guard context.id == target.withLock({ $0 }) else { return nil }
            switch point {
            case .insideAHandler:
                crashable.crash()
                return Future(.forever)
            case .duringAHeartbeat, .duringTheDrain:
                return Future(.forever)
            case .rightAfterAClaimCommits, .afterTheEffectBeforeTheCompletionCommits:
                return nil
            }
        })

        // Acknowledged enqueues: immediate, delayed, failing a few times, and two with one unique key.
        var acknowledged: [JobID] = []
        for index in 0..<12 {
            var options = EnqueueOptions()
            if index % 3 == 1 { options.after = .seconds(Int64(index)) }
            if index >= 10 { options.uniqueKey = "unique" }
            let payload = Work(index: index, failures: index % 4 == 3 ? 2 : 0)
            let handle = try completed(client.enqueue(work, payload, options: options))
            if index == targetIndex { target.withLock { $0 = handle.id } }
            acknowledged.append(handle.id)
        }
        #expect(Set(acknowledged).count == 11, "the second unique enqueue answered the first job")

        firstWorker.start()
        if point == .duringTheDrain {
            jobs.clock.advance(by: .seconds(1))
            _ = firstWorker.shutdown(gracePeriod: .seconds(3))
        }
        var waited = 0
        while !crashable.hasCrashed && waited < 120 {
            jobs.clock.advance(by: .seconds(1))
            waited += 1
        }
        try #require(crashable.hasCrashed, "the crash point was reached")
        let targetID = try #require(target.withLock { $0 })
        let orphan = try #require(try completed(firstStore.job(targetID)))
        #expect(orphan.state == .running, "the target was running when the process died")
        let leaseEnd = try #require(orphan.leaseExpiresAt).timeIntervalSince(ManualWallClock.start)
        firstStore.close()

        // The second process: the same file, nothing else.
        let secondStore = try jobs.openStore()
        let secondWorker = JobWorker(
            store: secondStore, scheduler: jobs.scheduler,
            configuration: .init(concurrencyByQueue: ["default": 3], leaseDuration: lease, identity: "second"))
        secondWorker.register(work, handler: Self.handler(jobs: jobs, external: external) { _ in nil })
        secondWorker.start()
        jobs.advance(by: .seconds(180))

        let records = try completed(secondStore.jobs(state: nil, queue: nil, limit: 100))
        #expect(records.count == 11, "one row per acknowledged job, no more")
        #expect(Set(records.map(\.id)) == Set(acknowledged))
        for record in records {
            #expect(record.state == .completed, "job \(record.id) ended \(record.state)")
            #expect(external.count(record.id) <= record.attempt, "no more external effects than attempts")
        }
        let effects = try completed(secondStore.transaction { try $0.query("SELECT job FROM effects ORDER BY job", []) })
        #expect(effects == records.map { [.integer($0.id.rawValue)] }, "each transactional effect exactly once")

        let rescue = try #require(external.starts(targetID).last)
        #expect(rescue >= leaseEnd, "rescued no earlier than the lease's end")
        #expect(rescue <= leaseEnd + 1, "rescued within a second of the lease's end")
        let rescued = try #require(records.first { $0.id == targetID })
        #expect(rescued.worker == "second" && rescued.lifecycle.leaseExpiries == 1)
    }

    /// The handler both processes run: appends its external line, fails as the payload says, and
    /// writes its transactional effect at completion. `override` may replace the outcome for a job.
    private static func handler(
        jobs: VirtualJobs, external: ExternalEffects,
        override: @escaping @Sendable (JobContext) -> Future<Void>?
    ) -> @Sendable (Work, JobContext) -> Future<Void> {
        { payload, context in
            external.append(context.id, at: jobs.elapsedSeconds)
            if let replaced = override(context) { return replaced }
            if context.attempt <= payload.failures { return Future(error: TestFailure()) }
            context.addCompletionEffect { transaction in
                try transaction.execute(
                    "INSERT INTO effects VALUES (?, ?)", [.integer(context.id.rawValue), .integer(Int64(context.attempt))])
            }
            return Future()
        }
    }
}
