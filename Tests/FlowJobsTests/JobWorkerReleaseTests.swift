import Flow
import FlowJobs
import FlowTestSupport
import Foundation
import Testing

private let chore = JobKind<Message>(name: "chore", maxAttempts: 3, backoff: .constant(10))

/// A worker and its store on a virtual clock, and a client of the store.
private func openWorker(
    _ jobs: VirtualJobs, identity: String = "worker-1"
) throws -> (store: SQLiteJobStore, client: JobClient, worker: JobWorker) {
    let store = try jobs.openStore()
    let worker = JobWorker(store: store, scheduler: jobs.scheduler, configuration: .init(identity: identity))
    return (store, JobClient(store: store), worker)
}

/// What a worker lets go of when an attempt ends, when it crashes and when it is released: nothing of
/// an attempt (its handler's operation, its context, the effects that capture the context) outlives it.
@Suite("JobWorker lets go of what its attempts hold")
struct JobWorkerReleaseTests {
    @Test func aWorkerLetGoWhileItsHandlersRunCancelsThemAndLeavesTheJobsToBeRescued() throws {
        let jobs = VirtualJobs()
        let store = try jobs.openStore()
        let client = JobClient(store: store)
        // The only reference to the worker.
        var worker: JobWorker? = JobWorker(store: store, scheduler: jobs.scheduler)
        let work = PendingWork()
        worker?.register(chore) { _, _ in work.future() }
        worker?.start()
        for text in ["a", "b"] { try completed(client.enqueue(chore, Message(text: text))) }
        jobs.clock.advance(by: .zero)
        #expect(worker?.runningCount == 2 && work.waitingCount == 2)

        worker = nil
        #expect(work.disposedCount == 2, "each running handler's operation is disposed")
        #expect(work.waitingCount == 0)
        #expect(jobs.clock.pendingCount == 0, "no heartbeat or wake-up is left armed")
        let running = try completed(store.jobs(state: .running, queue: nil, limit: 10))
        #expect(running.count == 2, "nothing is written: the jobs are rescued once their leases end")
    }

    @Test func anAttemptsContextAndTheEffectsCapturingItAreFreedOnceTheAttemptEnds() throws {
        let jobs = VirtualJobs()
        let (store, client, worker) = try openWorker(jobs)
        try completed(store.transaction { try $0.execute("CREATE TABLE sent (job INTEGER PRIMARY KEY)", []) })
        let effectsAlive = LiveObjects()
        let work = PendingWork()
        worker.register(chore) { payload, context in
            let tracked = effectsAlive.make()
            // The documented shape: the effect reads the context, which keeps the effect.
            context.addCompletionEffect { transaction in
                tracked.touch()
                try transaction.execute("INSERT INTO sent VALUES (?)", [.integer(context.id.rawValue)])
            }
            switch payload.text {
            case "fails": return Future(error: TestFailure())
            case "hangs": return work.future()
            default: return Future()
            }
        }
        worker.start()
        let completes = try completed(client.enqueue(chore, Message(text: "completes")))
        _ = try completed(client.enqueue(chore, Message(text: "fails")))
        jobs.clock.advance(by: .zero)
        #expect(effectsAlive.alive == 0, "a completed attempt's and a failed attempt's effects are let go")
        let sent = try completed(store.transaction { try $0.query("SELECT job FROM sent", []) })
        #expect(sent == [[.integer(completes.id.rawValue)]], "only the completed attempt's effect ran")

        _ = try completed(client.enqueue(chore, Message(text: "hangs")))
        jobs.clock.advance(by: .zero)
        #expect(effectsAlive.alive == 1 && work.waitingCount == 1)
        worker.simulateCrash()
        #expect(effectsAlive.alive == 0, "a crashed worker's running attempts let go of their effects")
        #expect(work.disposedCount == 1)
    }

    @Test func aCrashDuringAShutdownFailsTheShutdownsFutureInsteadOfDroppingIt() throws {
        let jobs = VirtualJobs()
        let (_, client, worker) = try openWorker(jobs)
        let work = PendingWork()
        worker.register(chore) { _, _ in work.future() }
        worker.start()
        try completed(client.enqueue(chore, Message(text: "still running")))
        jobs.clock.advance(by: .zero)
        let stopped = worker.shutdown(gracePeriod: .seconds(10))
        jobs.clock.advance(by: .seconds(1))
        #expect(throws: NotCompleted.self, "the grace period is not over") { try completed(stopped) }

        let (_, reports) = FlowDiagnostics.capturingReports { worker.simulateCrash() }
        #expect(reports.map(\.description) == [], "no future's completion is dropped uncalled")
        #expect(throws: FutureError.aborted) { try completed(stopped) }
        #expect(work.disposedCount == 1, "the running handler is cancelled")
        #expect(jobs.clock.pendingCount == 0, "the grace period's timer and the heartbeat are stopped")
    }
}
