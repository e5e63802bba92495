import Flow
import FlowJobs
import FlowTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import Testing

private let chore = JobKind<Message>(name: "chore", maxAttempts: 3)

/// A worker on a real loop, its store on the writer thread, and a stream of the attempts it starts.
private struct ServiceRig {
    let directory = TemporaryDirectory()
    let store: SQLiteJobStore
    let client: JobClient
    let events = EventLog()
    let started = AsyncStream<JobRecord>.makeStream()
    let work = PendingWork()

    init() throws {
        store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        client = JobClient(store: store)
    }

    func worker(on loop: EventLoop) -> JobWorker {
        let log = events.onEvent
        let started = started.continuation
        let worker = JobWorker(
            store: store, scheduler: loop.scheduler,
            configuration: .init(onEvent: { event in
                log(event)
                if case .attemptStarted(let record) = event { started.yield(record) }
            }))
        worker.register(chore) { [work] _, _ in work.future() }
        return worker
    }

    /// Waits until `count` attempts have started.
    func waitForStarts(_ count: Int) async {
        var seen = 0
        for await _ in started.stream {
            seen += 1
            if seen == count { return }
        }
    }
}

private let quietLogger: Logger = {
    var logger = Logger(label: "flow.jobs.tests")
    logger.logLevel = .error
    return logger
}()

@Suite("JobWorkerService in a ServiceGroup, on a real loop")
struct JobWorkerServiceTests {
    @Test func aGracefulShutdownLetsRunningJobsFinishWithinTheGracePeriod() async throws {
        let rig = try ServiceRig()
        try await withCountedLoop("jobs.service.drain") { loop in
            let worker = rig.worker(on: loop)
            let group = ServiceGroup(
                services: [JobWorkerService(worker: worker, gracePeriod: .seconds(hangGuardSeconds))],
                logger: quietLogger)
            let running = Task { try await group.run() }
            let jobs = try await [
                rig.client.enqueue(chore, Message(text: "one")).get(), rig.client.enqueue(chore, Message(text: "two")).get(),
            ]
            await rig.waitForStarts(2)
            await group.triggerGracefulShutdown()
            rig.work.completeAll()
            try await running.value
            for job in jobs { #expect(try await rig.client.job(job.id).get()?.state == .completed) }
            #expect(rig.events.released.isEmpty, "nothing given back: both finished in the grace period")
            #expect(worker.runningCount == 0)
        }
        try await rig.store.close().get()
    }

    @Test func aJobStillRunningAtTheEndOfTheGracePeriodIsGivenBackToRunAgainAtOnce() async throws {
        let rig = try ServiceRig()
        try await withCountedLoop("jobs.service.deadline") { loop in
            let worker = rig.worker(on: loop)
            let group = ServiceGroup(
                services: [JobWorkerService(worker: worker, gracePeriod: .milliseconds(50))], logger: quietLogger)
            let running = Task { try await group.run() }
            let stuck = try await rig.client.enqueue(chore, Message(text: "stuck")).get()
            await rig.waitForStarts(1)
            await group.triggerGracefulShutdown()
            try await running.value
            let record = try #require(try await rig.client.job(stuck.id).get())
            #expect(record.state == .available && record.attempt == 0, "given back, the attempt not counted")
            #expect(record.leaseExpiresAt == nil)
            #expect(rig.events.released.map(\.id) == [stuck.id])
        }
        try await rig.store.close().get()
    }

    @Test func aCancelledServiceGivesItsRunningJobsBackAtOnce() async throws {
        let rig = try ServiceRig()
        try await withCountedLoop("jobs.service.cancel") { loop in
            let worker = rig.worker(on: loop)
            let group = ServiceGroup(
                services: [JobWorkerService(worker: worker, gracePeriod: .seconds(hangGuardSeconds))],
                logger: quietLogger)
            let running = Task { try await group.run() }
            let stuck = try await rig.client.enqueue(chore, Message(text: "stuck")).get()
            await rig.waitForStarts(1)
            running.cancel()
            _ = try? await running.value
            let record = try #require(try await rig.client.job(stuck.id).get())
            #expect(record.state == .available && record.attempt == 0)
            #expect(rig.events.released.map(\.id) == [stuck.id])
        }
        try await rig.store.close().get()
    }
}
