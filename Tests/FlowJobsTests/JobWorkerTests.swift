import Flow
import FlowJobs
import FlowTimers
import Foundation
import Logging
import MetricsTestKit
import Synchronization
import Testing

/// A worker, its store and its client on a virtual clock.
private struct Rig {
    let jobs = VirtualJobs()
    let events = EventLog()
    let store: SQLiteJobStore
    let client: JobClient
    /// The workers ``startWorker(_:_:identity:logger:metrics:handler:)`` started.
    private let started = StartedWorkers()

    init() throws {
        store = try jobs.openStore()
        client = JobClient(store: store)
    }

    func worker(
        _ queues: [String: Int] = ["default": 10], lease: Duration = .seconds(15), identity: String = "worker-1",
        maxLeaseExpiries: Int = 3, logger: Logger? = nil, metrics: JobMetrics? = nil
    ) -> JobWorker {
        JobWorker(
            store: store, scheduler: jobs.scheduler,
            configuration: .init(
                concurrencyByQueue: queues, leaseDuration: lease, maxLeaseExpiries: maxLeaseExpiries,
                identity: identity, onEvent: events.onEvent, logger: logger, metrics: metrics))
    }

    /// A worker of ``worker(_:lease:identity:maxLeaseExpiries:logger:metrics:)`` running `handler`
    /// for `kind`, started, and kept by the rig for the test's length (a worker let go stops).
    @discardableResult
    func startWorker<Payload>(
        _ kind: JobKind<Payload>, _ queues: [String: Int] = ["default": 10], identity: String = "worker-1",
        logger: Logger? = nil, metrics: JobMetrics? = nil,
        handler: @escaping @Sendable (Payload, JobContext) -> Future<Void>
    ) -> JobWorker {
        let worker = worker(queues, identity: identity, logger: logger, metrics: metrics)
        worker.register(kind, handler: handler)
        worker.start()
        started.add(worker)
        return worker
    }

    func enqueue<Payload>(
        _ kind: JobKind<Payload>, _ payload: Payload, _ options: EnqueueOptions = EnqueueOptions()
    ) throws -> JobHandle {
        try completed(client.enqueue(kind, payload, options: options))
    }

    func record(_ handle: JobHandle) throws -> JobRecord {
        try #require(try completed(client.job(handle.id)))
    }
}

/// Keeps a rig's started workers alive until the rig goes.
private final class StartedWorkers: Sendable {
    private let workers = Synchronization.Mutex<[JobWorker]>([])

    func add(_ worker: JobWorker) { workers.withLock { $0.append(worker) } }
}

private let message = JobKind<Message>(name: "message", maxAttempts: 3, backoff: .constant(10))

@Suite("JobWorker on the virtual clock")
struct JobWorkerTests {
    @Test func anEnqueuedJobRunsAtOnceAndItsHandleSeesItComplete() throws {
        let rig = try Rig()
        let seen = Synchronization.Mutex<[String]>([])
        rig.startWorker(message) { payload, context in
            seen.withLock { $0.append("\(payload.text)#\(context.attempt)") }
            return Future()
        }
        let handle = try rig.enqueue(message, Message(text: "hello"))
        let finished = handle.finished()
        rig.jobs.clock.advance(by: .zero)
        #expect(seen.withLock { $0 } == ["hello#1"])
        let record = try completed(finished)
        #expect(record.state == .completed && record.attempt == 1)
        #expect(rig.jobs.clock.pendingCount == 0, "an idle worker arms no timer: it does not poll")
    }

    @Test func everyWaiterOfAJobHearsItsEndAndACancelledWaitIsDropped() throws {
        let rig = try Rig()
        let work = PendingWork()
        rig.startWorker(message) { _, _ in work.future() }
        let handle = try rig.enqueue(message, Message(text: "watched"))
        rig.jobs.clock.advance(by: .zero)
        let first = handle.finished()
        let second = rig.client.handle(for: handle.id).finished()
        let dropped = handle.finished()
        dropped.cancel()
        work.completeAll()
        rig.jobs.clock.advance(by: .zero)
        #expect(try completed(first).state == .completed)
        #expect(try completed(second).state == .completed)
        #expect(throws: FutureError.aborted) { try completed(dropped) }
    }

    @Test func aDelayedJobRunsAtItsDueTimeFromATimerNotBefore() throws {
        let rig = try Rig()
        let ranAt = Synchronization.Mutex<[Double]>([])
        let jobs = rig.jobs
        rig.startWorker(message) { _, _ in
            ranAt.withLock { $0.append(jobs.elapsedSeconds) }
            return Future()
        }
        _ = try rig.enqueue(message, Message(text: "later"), EnqueueOptions(after: .seconds(60)))
        rig.jobs.clock.advance(by: .zero)
        #expect(rig.jobs.clock.pendingCount == 1, "one timer, for the due time")
        rig.jobs.clock.advance(by: .seconds(59))
        #expect(ranAt.withLock { $0 }.isEmpty)
        rig.jobs.clock.advance(by: .seconds(1))
        #expect(ranAt.withLock { $0 } == [60])
    }

    @Test func aDelayedJobIsClaimedJustAheadAndStartsFromATimerAtItsRunTime() throws {
        let rig = try Rig()
        let ranAt = Synchronization.Mutex<[Double]>([])
        let jobs = rig.jobs
        rig.startWorker(message) { _, _ in
            ranAt.withLock { $0.append(jobs.elapsedSeconds) }
            return Future()
        }
        let handle = try rig.enqueue(message, Message(text: "on time"), EnqueueOptions(after: .seconds(60)))
        rig.jobs.clock.advance(by: .zero)
        rig.jobs.clock.advance(by: .milliseconds(59_990))
        #expect(try rig.record(handle).state == .running, "claimed before its run time")
        #expect(ranAt.withLock { $0 }.isEmpty, "but not started")
        rig.jobs.clock.advance(by: .milliseconds(10))
        #expect(ranAt.withLock { $0 } == [60])
    }

    @Test func aJobGivenARunTimeRunsThen() throws {
        let rig = try Rig()
        let ranAt = Synchronization.Mutex<[Double]>([])
        let jobs = rig.jobs
        rig.startWorker(message) { _, _ in
            ranAt.withLock { $0.append(jobs.elapsedSeconds) }
            return Future()
        }
        let runAt = rig.store.clock.now().addingTimeInterval(90)
        let handle = try rig.enqueue(message, Message(text: "at"), EnqueueOptions(at: runAt))
        #expect(try rig.record(handle).state == .scheduled)
        rig.jobs.advance(by: .seconds(120))
        #expect(ranAt.withLock { $0 } == [90])
    }

    @Test func anEarlierEnqueueRearmsTheTimerOfAWaitingWorker() throws {
        let rig = try Rig()
        let ran = Synchronization.Mutex<[String]>([])
        rig.startWorker(message) { payload, _ in
            ran.withLock { $0.append(payload.text) }
            return Future()
        }
        _ = try rig.enqueue(message, Message(text: "in an hour"), EnqueueOptions(after: .seconds(3600)))
        rig.jobs.clock.advance(by: .zero)
        _ = try rig.enqueue(message, Message(text: "in a minute"), EnqueueOptions(after: .seconds(60)))
        rig.jobs.clock.advance(by: .seconds(60))
        #expect(ran.withLock { $0 } == ["in a minute"])
    }

    @Test func aFailingHandlerIsRetriedAfterItsBackoffUntilItSucceeds() throws {
        let rig = try Rig()
        let attempts = Synchronization.Mutex<[Double]>([])
        let jobs = rig.jobs
        rig.startWorker(message) { _, context in
            attempts.withLock { $0.append(jobs.elapsedSeconds) }
            return context.attempt < 3 ? Future(error: TestFailure()) : Future()
        }
        let handle = try rig.enqueue(message, Message(text: "flaky"))
        rig.jobs.advance(by: .seconds(30))
        #expect(attempts.withLock { $0 } == [0, 10, 20])
        let record = try rig.record(handle)
        #expect(record.state == .completed && record.attempt == 3 && record.lastError == "the handler failed on purpose")
    }

    @Test func aHandlerThatAlwaysThrowsIsDiscardedWhenItsAttemptsRunOut() throws {
        let rig = try Rig()
        rig.startWorker(message) { _, _ in Future(error: TestFailure()) }
        let handle = try rig.enqueue(message, Message(text: "doomed"))
        let finished = handle.finished()
        rig.jobs.advance(by: .seconds(60))
        let record = try completed(finished)
        #expect(record.state == .discarded && record.attempt == 3)
        #expect(rig.events.finished.map(\.state) == [.retryable, .retryable, .discarded])
    }

    @Test func aTimeoutCancelsTheHandlersFutureAndFailsTheAttempt() throws {
        let rig = try Rig()
        let work = PendingWork()
        let slow = JobKind<Message>(name: "slow", maxAttempts: 2, backoff: .constant(100), timeout: .seconds(5))
        rig.startWorker(slow) { _, _ in work.future() }
        let handle = try rig.enqueue(slow, Message(text: "hangs"))
        rig.jobs.advance(by: .seconds(4))
        #expect(work.disposedCount == 0)
        rig.jobs.advance(by: .seconds(1))
        #expect(work.disposedCount == 1, "the handler's operation is disposed at the deadline")
        let record = try rig.record(handle)
        #expect(record.state == .retryable && record.lastError == "\(TimeoutError(delay: 5))")
    }

    @Test func aTimeoutGivenAtTheEnqueueReplacesTheKindsAndHoldsForTheRetryToo() throws {
        let rig = try Rig()
        let work = PendingWork()
        let patient = JobKind<Message>(name: "patient", maxAttempts: 2, backoff: .constant(100), timeout: .seconds(60))
        let attempts = Synchronization.Mutex(0)
        rig.startWorker(patient) { _, _ in
            attempts.withLock { $0 += 1 }
            return work.future()
        }
        let handle = try rig.enqueue(patient, Message(text: "hurried"), EnqueueOptions(timeout: .seconds(5)))
        #expect(try rig.record(handle).timeout == .seconds(5), "kept with the job")
        rig.jobs.advance(by: .seconds(4))
        #expect(work.disposedCount == 0)
        rig.jobs.advance(by: .seconds(1))
        #expect(work.disposedCount == 1, "the enqueue's 5 s, not the kind's 60 s")
        #expect(try rig.record(handle).state == .retryable)
        // The retry is claimed again from the store, and reads its limit from there.
        rig.jobs.advance(by: .seconds(100))
        #expect(attempts.withLock { $0 } == 2)
        rig.jobs.advance(by: .seconds(5))
        let record = try rig.record(handle)
        #expect(record.state == .discarded && record.attempt == 2 && record.lastError == "\(TimeoutError(delay: 5))")
    }

    @Test func aHandlerThatIgnoresCancellationCannotCompleteTheJobLate() throws {
        let rig = try Rig()
        let late = Synchronization.Mutex<(@Sendable (Result<Void>) -> Void)?>(nil)
        let stubborn = JobKind<Message>(name: "stubborn", maxAttempts: 1, timeout: .seconds(5))
        rig.startWorker(stubborn) { _, _ in
            // Keeps its completion past the cancellation, and calls it anyway.
            Future<Void>(on: .none) { completion in
                late.withLock { $0 = completion }
                return NilDisposer()
            }
        }
        let handle = try rig.enqueue(stubborn, Message(text: "stubborn"))
        rig.jobs.advance(by: .seconds(5))
        late.withLock { $0 }?(.success(()))
        rig.jobs.advance(by: .seconds(1))
        let record = try rig.record(handle)
        #expect(record.state == .discarded && record.lastError == "\(TimeoutError(delay: 5))")
        #expect(rig.events.finished.count == 1)
    }

    @Test func aQueueRunsAtMostItsConcurrencyLimitAndAFreedSlotTakesTheNextJob() throws {
        let rig = try Rig()
        let work = PendingWork()
        let worker = rig.startWorker(message, ["default": 2]) { _, _ in work.future() }
        for index in 0..<5 { _ = try rig.enqueue(message, Message(text: "\(index)")) }
        rig.jobs.clock.advance(by: .zero)
        #expect(worker.runningCount == 2 && work.waitingCount == 2)
        work.completeFirst()
        rig.jobs.clock.advance(by: .zero)
        #expect(worker.runningCount == 2 && work.waitingCount == 2)
        #expect(rig.events.started.count == 3)
    }

    @Test func aGlobalLimitHoldsAcrossWorkersAndAFinishFreesItAtOnce() throws {
        let rig = try Rig()
        try completed(rig.store.setConcurrencyLimit(1, forQueue: "default"))
        let work = PendingWork()
        let workers = [rig.worker(identity: "one"), rig.worker(identity: "two")]
        for worker in workers {
            worker.register(message) { _, _ in work.future() }
            worker.start()
        }
        for index in 0..<3 { _ = try rig.enqueue(message, Message(text: "\(index)")) }
        rig.jobs.clock.advance(by: .zero)
        #expect(workers.map(\.runningCount).reduce(0, +) == 1)
        work.completeFirst()
        rig.jobs.clock.advance(by: .zero)
        #expect(workers.map(\.runningCount).reduce(0, +) == 1)
        #expect(rig.events.started.count == 2, "the next job started as soon as the first finished")
        #expect(rig.jobs.clock.pendingCount == 2, "only the running job's heartbeat and another's lease timer")
    }

    @Test func aClosedStoreIsReportedAndNotRetriedForever() throws {
        let rig = try Rig()
        let work = PendingWork()
        rig.startWorker(message) { _, _ in work.future() }
        _ = try rig.enqueue(message, Message(text: "outlives its store"))
        rig.jobs.clock.advance(by: .zero)
        try completed(rig.store.close())
        work.completeAll()
        rig.jobs.advance(by: .seconds(5))
        let failures = rig.events.all.compactMap { if case .storeFailed(let message) = $0 { message } else { nil } }
        #expect(failures.count == 2 && failures.allSatisfy { $0.contains("closed") }, "\(failures)")
        #expect(rig.jobs.clock.pendingCount == 0, "no timer keeps trying a closed store")
    }

    @Test func higherPriorityRunsFirstAndOtherQueuesAreLeftAlone() throws {
        let rig = try Rig()
        let order = Synchronization.Mutex<[String]>([])
        _ = try rig.enqueue(message, Message(text: "low"), EnqueueOptions(priority: 0))
        _ = try rig.enqueue(message, Message(text: "high"), EnqueueOptions(priority: 10))
        let elsewhere = try rig.enqueue(message, Message(text: "elsewhere"), EnqueueOptions(queue: "reports"))
        rig.startWorker(message, ["default": 1]) { payload, _ in
            order.withLock { $0.append(payload.text) }
            return Future()
        }
        rig.jobs.advance(by: .seconds(1))
        #expect(order.withLock { $0 } == ["high", "low"])
        #expect(try rig.record(elsewhere).state == .available)
    }

    @Test func heartbeatsKeepALongJobsLeaseSoNoOtherWorkerTakesIt() throws {
        let rig = try Rig()
        let work = PendingWork()
        let first = rig.worker(identity: "first")
        let second = rig.worker(identity: "second")
        for worker in [first, second] { worker.register(message) { _, _ in work.future() } }
        first.start()
        let handle = try rig.enqueue(message, Message(text: "long"))
        rig.jobs.clock.advance(by: .zero)
        second.start()
        rig.jobs.advance(by: .seconds(120))
        #expect(rig.events.started.count == 1, "the lease never lapsed")
        work.completeAll()
        rig.jobs.clock.advance(by: .zero)
        let record = try rig.record(handle)
        #expect(record.state == .completed && record.attempt == 1 && record.worker == "first")
    }

    @Test func aDeadWorkersJobRunsAgainRightAfterItsLeaseAndTheAttemptCounts() throws {
        let rig = try Rig()
        let work = PendingWork()
        let dead = rig.worker(identity: "dead")
        dead.register(message) { _, _ in work.future() }
        dead.start()
        let handle = try rig.enqueue(message, Message(text: "orphan"))
        rig.jobs.clock.advance(by: .zero)
        dead.simulateCrash()
        let rescuer = rig.worker(identity: "rescuer")
        let ranAt = Synchronization.Mutex<[Double]>([])
        let jobs = rig.jobs
        rescuer.register(message) { _, _ in
            ranAt.withLock { $0.append(jobs.elapsedSeconds) }
            return Future()
        }
        rescuer.start()
        rig.jobs.clock.advance(by: .seconds(14))
        #expect(ranAt.withLock { $0 }.isEmpty)
        rig.jobs.clock.advance(by: .seconds(1))
        #expect(ranAt.withLock { $0 } == [15], "rescued by a timer at the lease's end, not by polling")
        let record = try rig.record(handle)
        #expect(record.state == .completed && record.attempt == 2 && record.lifecycle.leaseExpiries == 1)
    }

    @Test func anAttemptWhoseJobItsOwnWorkerClaimedAgainEndsWithoutEndingTheNewAttempt() throws {
        let rig = try Rig()
        let firstAttempt = PendingWork()
        let laterAttempts = PendingWork()
        rig.startWorker(message) { payload, context in
            payload.text == "slow" && context.attempt == 1 ? firstAttempt.future() : laterAttempts.future()
        }
        let handle = try rig.enqueue(message, Message(text: "slow"))
        rig.jobs.clock.advance(by: .zero)
        // The wall clock passes the lease's end before a heartbeat (as when a claim answers after the
        // lease it gave has ended): the worker's next claim rescues its own job and claims it again.
        rig.jobs.stepWallClock(by: 16)
        _ = try rig.enqueue(message, Message(text: "wakes the worker"))
        rig.jobs.clock.advance(by: .zero)
        #expect(rig.events.started.filter { $0.id == handle.id }.map(\.attempt) == [1, 2])
        #expect(rig.events.leasesLost.map(\.id) == [handle.id])
        #expect(firstAttempt.waitingCount == 0, "the first attempt's handler was cancelled")
        firstAttempt.completeAll()
        rig.jobs.clock.advance(by: .zero)
        #expect(try rig.record(handle).state == .running, "the first attempt's end did not end the second")
        laterAttempts.completeAll()
        rig.jobs.clock.advance(by: .zero)
        let record = try rig.record(handle)
        #expect(record.state == .completed && record.attempt == 2 && record.lifecycle.leaseExpiries == 1)
    }

    @Test func aJobThatKeepsKillingItsWorkersIsQuarantinedWithTheLastWorkersName() throws {
        let rig = try Rig()
        let handle = try rig.enqueue(message, Message(text: "poison"))
        for round in 1...3 {
            let worker = rig.startWorker(message, identity: "victim-\(round)") { _, _ in Future(.forever) }
            rig.jobs.clock.advance(by: .zero)
            worker.simulateCrash()
            rig.jobs.clock.advance(by: .seconds(15))
        }
        let survivor = rig.worker(identity: "survivor")
        survivor.register(message) { _, _ in Future() }
        survivor.start()
        rig.jobs.clock.advance(by: .zero)
        let record = try rig.record(handle)
        #expect(record.state == .quarantined && record.worker == "victim-3" && record.lifecycle.leaseExpiries == 3)
    }

    @Test func cancellingAQueuedJobKeepsItFromRunning() throws {
        let rig = try Rig()
        let ran = Synchronization.Mutex(false)
        rig.startWorker(message) { _, _ in
            ran.withLock { $0 = true }
            return Future()
        }
        let handle = try rig.enqueue(message, Message(text: "unwanted"), EnqueueOptions(after: .seconds(10)))
        let finished = handle.finished()
        #expect(try completed(handle.cancel()) == .cancelled)
        rig.jobs.advance(by: .seconds(20))
        #expect(!ran.withLock { $0 })
        #expect(try completed(finished).state == .cancelled)
    }

    @Test func cancellingARunningJobCancelsItsHandlersFuture() throws {
        let rig = try Rig()
        let work = PendingWork()
        rig.startWorker(message) { _, _ in work.future() }
        let handle = try rig.enqueue(message, Message(text: "stop me"))
        rig.jobs.clock.advance(by: .zero)
        #expect(try completed(handle.cancel()) == .requested)
        rig.jobs.clock.advance(by: .zero)
        #expect(work.disposedCount == 1)
        #expect(try rig.record(handle).state == .cancelled)
    }

    @Test func aPayloadThatNoLongerDecodesIsDiscardedWithTheErrorRecorded() throws {
        let rig = try Rig()
        let job = NewJob(name: "message", queue: "default", payload: Data("{\"txt\": 1}".utf8), maxAttempts: 5)
        let enqueued = try completed(rig.store.enqueue([job]))
        let ran = Synchronization.Mutex(false)
        rig.startWorker(message) { _, _ in
            ran.withLock { $0 = true }
            return Future()
        }
        rig.jobs.clock.advance(by: .zero)
        let record = try #require(try completed(rig.store.job(enqueued[0].id)))
        #expect(!ran.withLock { $0 })
        #expect(record.state == .discarded && record.attempt == 1)
        #expect(record.lastError?.contains("does not decode") == true)
    }

    @Test func aJobNoWorkerKnowsStaysQueuedUntouched() throws {
        let rig = try Rig()
        let unknown = JobKind<Message>(name: "not-registered")
        let handle = try rig.enqueue(unknown, Message(text: "?"))
        rig.startWorker(message) { _, _ in Future() }
        rig.jobs.advance(by: .seconds(60))
        let record = try rig.record(handle)
        #expect(record.state == .available && record.attempt == 0)
        #expect(rig.jobs.clock.pendingCount == 0, "and the worker does not poll for it")
    }

    @Test func gracefulShutdownLetsRunningJobsFinishThenGivesTheRestBack() throws {
        let rig = try Rig()
        let quick = PendingWork()
        let stuck = PendingWork()
        let worker = rig.startWorker(message) { payload, _ in payload.text == "quick" ? quick.future() : stuck.future() }
        let quickJob = try rig.enqueue(message, Message(text: "quick"))
        let stuckJob = try rig.enqueue(message, Message(text: "stuck"))
        rig.jobs.clock.advance(by: .zero)
        let stopped = worker.shutdown(gracePeriod: .seconds(10))
        _ = try rig.enqueue(message, Message(text: "too late"))
        rig.jobs.clock.advance(by: .seconds(2))
        quick.completeAll()
        rig.jobs.clock.advance(by: .seconds(1))
        #expect(throws: NotCompleted.self) { try completed(stopped) }
        rig.jobs.clock.advance(by: .seconds(7))
        try completed(stopped)
        #expect(stuck.disposedCount == 1)
        #expect(try rig.record(quickJob).state == .completed)
        let given = try rig.record(stuckJob)
        #expect(given.state == .available && given.attempt == 0)
        #expect(rig.events.started.count == 2, "nothing is claimed once the shutdown began")
        #expect(rig.jobs.clock.pendingCount == 0)
    }

    @Test func theWallClockSteppingBackwardsDelaysDueJobsButRunsEachOnce() throws {
        let rig = try Rig()
        let ranAt = Synchronization.Mutex<[Double]>([])
        let jobs = rig.jobs
        let work = PendingWork()
        rig.startWorker(message) { payload, _ in
            ranAt.withLock { $0.append(jobs.elapsedSeconds) }
            return payload.text == "running" ? work.future() : Future()
        }
        let running = try rig.enqueue(message, Message(text: "running"))
        let delayed = try rig.enqueue(message, Message(text: "delayed"), EnqueueOptions(after: .seconds(60)))
        rig.jobs.clock.advance(by: .zero)
        rig.jobs.stepWallClock(by: -30)
        rig.jobs.advance(by: .seconds(60))
        #expect(ranAt.withLock { $0 } == [0], "the delayed job is due 30 s later by the stepped clock")
        rig.jobs.advance(by: .seconds(30))
        #expect(ranAt.withLock { $0 } == [0, 90])
        work.completeAll()
        rig.jobs.clock.advance(by: .zero)
        #expect(try rig.record(running).state == .completed && rig.record(running).attempt == 1)
        #expect(try rig.record(delayed).state == .completed && rig.record(delayed).attempt == 1)
    }

    @Test func completionEffectsCommitExactlyOnceWithTheJob() throws {
        let rig = try Rig()
        try completed(rig.store.transaction { try $0.execute("CREATE TABLE sent (job INTEGER PRIMARY KEY)", []) })
        rig.startWorker(message) { _, context in
            context.addCompletionEffect { transaction in
                try transaction.execute("INSERT INTO sent VALUES (?)", [.integer(context.id.rawValue)])
            }
            return Future()
        }
        let handle = try rig.enqueue(message, Message(text: "once"))
        rig.jobs.advance(by: .seconds(5))
        #expect(try rig.record(handle).state == .completed)
        let rows = try completed(rig.store.transaction { try $0.query("SELECT job FROM sent", []) })
        #expect(rows == [[.integer(handle.id.rawValue)]])
    }

    @Test func aThrowingCompletionEffectFailsTheAttemptAndCommitsNothing() throws {
        let rig = try Rig()
        rig.startWorker(message) { _, context in
            context.addCompletionEffect { transaction in
                if context.attempt == 1 { throw TestFailure() }
            }
            return Future()
        }
        let handle = try rig.enqueue(message, Message(text: "second time lucky"))
        rig.jobs.clock.advance(by: .zero)
        #expect(try rig.record(handle).state == .retryable)
        rig.jobs.advance(by: .seconds(10))
        let record = try rig.record(handle)
        #expect(record.state == .completed && record.attempt == 2)
    }

    @Test func eachAttemptIsLoggedWithTheJobsMetadata() throws {
        let rig = try Rig()
        let lines = CapturingLogHandler.Lines()
        let logger = Logger(label: "jobs") { _ in CapturingLogHandler(lines: lines) }
        rig.startWorker(message, identity: "logged", logger: logger) { _, context in
            context.attempt == 1 ? Future(error: TestFailure()) : Future()
        }
        let handle = try rig.enqueue(message, Message(text: "logged"))
        rig.jobs.advance(by: .seconds(10))
        #expect(lines.all.map(\.level) == [.debug, .warning, .debug, .info])
        let failure = lines.all[1]
        #expect(failure.metadata["job.id"] == "\(handle.id.rawValue)" && failure.metadata["job.attempt"] == "1")
        #expect(failure.metadata["job.name"] == "message" && failure.metadata["job.worker"] == "logged")
        #expect(failure.metadata["job.error"] == "the handler failed on purpose")
        #expect(lines.all[3].metadata["job.state"] == "completed")
    }
}

@Suite("JobWorker metrics")
struct JobWorkerMetricsTests {
    @Test func attemptsRunTimeLagAndClaimLatencyAreReported() throws {
        let rig = try Rig()
        let metrics = TestMetrics()
        let work = PendingWork()
        _ = try rig.enqueue(message, Message(text: "slow"))
        _ = try rig.enqueue(message, Message(text: "fails"))
        rig.jobs.clock.advance(by: .seconds(5))
        rig.startWorker(message, metrics: JobMetrics(dimensions: [("service", "test")], factory: metrics)) {
            payload, _ in payload.text == "fails" ? Future(error: TestFailure()) : work.future()
        }
        rig.jobs.clock.advance(by: .seconds(3))
        work.completeAll()
        rig.jobs.clock.advance(by: .zero)

        let completedCount = try metrics.expectCounter(
            "flow_jobs_attempts", [("service", "test"), ("queue", "default"), ("name", "message"), ("state", "completed")])
        let retried = try metrics.expectCounter(
            "flow_jobs_attempts", [("service", "test"), ("queue", "default"), ("name", "message"), ("state", "retryable")])
        #expect(completedCount.totalValue == 1 && retried.totalValue == 1)
        let runTime = try metrics.expectTimer(
            "flow_jobs_run_time", [("service", "test"), ("queue", "default"), ("name", "message")])
        #expect(runTime.values.sorted() == [0, 3_000_000_000])
        let lag = try metrics.expectTimer("flow_jobs_lag", [("service", "test"), ("queue", "default")])
        #expect(lag.values == [5_000_000_000, 5_000_000_000], "both jobs started 5 s after their run time")
        let claims = try metrics.expectTimer("flow_jobs_claim_latency", [("service", "test")])
        #expect(!claims.values.isEmpty && claims.values.allSatisfy { $0 == 0 }, "a calling-thread store answers at once")
    }

    @Test func queueDepthAndLagAreMeasuredAfterEachClaim() throws {
        let rig = try Rig()
        let jobs = rig.jobs
        let metrics = TestMetrics()
        let work = PendingWork()
        for text in ["a", "b", "c"] { _ = try rig.enqueue(message, Message(text: text)) }
        jobs.clock.advance(by: .seconds(5))
        let worker = rig.startWorker(message, ["default": 1, "idle": 1], metrics: JobMetrics(factory: metrics)) {
            _, _ in work.future()
        }
        jobs.clock.advance(by: .zero)
        let depth = try metrics.expectGauge("flow_jobs_queue_depth", [("queue", "default")])
        let lag = try metrics.expectGauge("flow_jobs_queue_lag", [("queue", "default")])
        #expect(depth.lastValue == 2 && lag.lastValue == 5, "one of three claimed; the others waited 5 s")
        jobs.clock.advance(by: .seconds(2))
        work.completeFirst()
        jobs.clock.advance(by: .zero)
        #expect(depth.lastValue == 1 && lag.lastValue == 7)
        #expect(try metrics.expectGauge("flow_jobs_queue_depth", [("queue", "idle")]).lastValue == 0)
        #expect(try metrics.expectGauge("flow_jobs_queue_lag", [("queue", "idle")]).lastValue == 0)
        let stopped = worker.shutdown(gracePeriod: .zero)
        jobs.clock.advance(by: .zero)
        try completed(stopped)
    }

    @Test func leaseExpiriesAndQuarantinesAreCountedOnceByTheRescuingWorker() throws {
        let rig = try Rig()
        let jobs = rig.jobs
        let metrics = TestMetrics()
        func worker(_ identity: String) -> JobWorker {
            rig.worker(identity: identity, metrics: JobMetrics(factory: metrics))
        }
        let poison = JobKind<Message>(name: "poison", maxAttempts: 5)
        let handle = try rig.enqueue(poison, Message(text: "crashes its worker"))
        for round in 1...2 {
            let victim = worker("victim-\(round)")
            victim.register(poison) { _, _ in Future(.forever) }
            victim.start()
            jobs.clock.advance(by: .zero)
            victim.simulateCrash()
            jobs.clock.advance(by: .seconds(15))
        }
        // The third victim's claim rescued the second's job; a survivor's claim rescues the third's.
        let victim = worker("victim-3")
        victim.register(poison) { _, _ in Future(.forever) }
        victim.start()
        jobs.clock.advance(by: .zero)
        victim.simulateCrash()
        jobs.clock.advance(by: .seconds(15))
        let survivor = worker("survivor")
        survivor.register(poison) { _, _ in Future() }
        survivor.start()
        jobs.clock.advance(by: .zero)
        #expect(try rig.record(handle).state == .quarantined)
        let labels = [("queue", "default"), ("name", "poison")]
        #expect(try metrics.expectCounter("flow_jobs_lease_expiries", labels).totalValue == 3)
        #expect(try metrics.expectCounter("flow_jobs_quarantined", labels).totalValue == 1)
    }
}

@Suite("JobWorker and other processes")
struct JobWorkerOtherProcessTests {
    /// Two stores on one file behave as two processes: neither's writer commits for the other.
    @Test(.timeLimit(.minutes(1)))
    func anEnqueueThroughAnotherStoreOnTheFileWakesAnIdleWorkerThatArmedNoTimer() async throws {
        let jobs = VirtualJobs()
        let workerStore = try jobs.openStore()
        let otherProcess = try jobs.openStore()
        let worker = JobWorker(
            store: workerStore, scheduler: jobs.scheduler, configuration: .init(identity: "worker-1"))
        let seen = Synchronization.Mutex<[String]>([])
        worker.register(message) { payload, _ in
            seen.withLock { $0.append(payload.text) }
            return Future()
        }
        worker.start()
        jobs.clock.advance(by: .zero)
        #expect(seen.withLock { $0 }.isEmpty)
        #expect(jobs.clock.pendingCount == 0, "an idle worker arms no timer: it does not poll")

        // Observers hear a commit in the order they came: the worker has claimed when this one hears.
        let (heard, heardContinuation) = AsyncStream<Set<String>>.makeStream()
        let observation = workerStore.observe { notification in
            if case .enqueued(let queues) = notification { heardContinuation.yield(queues) }
        }
        defer { observation.dispose() }
        let handle = try completed(JobClient(store: otherProcess).enqueue(message, Message(text: "from afar")))
        var notifications = heard.makeAsyncIterator()
        #expect(await notifications.next() == ["default"])
        jobs.clock.advance(by: .zero)
        #expect(seen.withLock { $0 } == ["from afar"])
        jobs.clock.advance(by: .zero)
        #expect(try completed(workerStore.job(handle.id))?.state == .completed)
        #expect(jobs.clock.pendingCount == 0, "idle again, still no timer")
        try completed(worker.shutdown(gracePeriod: .seconds(1)))
        try completed(workerStore.close())
        try completed(otherProcess.close())
    }

    /// The handle's process never finishes the job: only the other store's commit can complete it.
    @Test(.timeLimit(.minutes(1)))
    func aHandleHearsItsJobFinishedThroughAnotherStoreOnTheFile() async throws {
        let jobs = VirtualJobs()
        let clientStore = try jobs.openStore()
        let otherProcess = try jobs.openStore()
        let handle = try completed(JobClient(store: clientStore).enqueue(message, Message(text: "done elsewhere")))
        let finished = handle.finished()
        let claimed = try completed(otherProcess.claim(
            ClaimRequest(
                slotsByQueue: ["default": 1], names: [message.name], worker: "other", leaseDuration: .seconds(15),
                maxLeaseExpiries: 3)))
        let record = try #require(claimed.jobs.first)
        #expect(record.id == handle.id)
        _ = try completed(otherProcess.finish(JobLease(id: record.id, fence: record.fence), outcome: .completed, effects: nil))

        let ended = try await finished.get()
        #expect(ended.id == handle.id && ended.state == .completed && ended.worker == "other")
        try completed(clientStore.close())
        try completed(otherProcess.close())
    }
}
