import Dispatch
import Flow
import FlowJobs
import FlowJobsPostgres
import FlowTestSupport
import Foundation
import Testing

/// The server of FLOW_TEST_POSTGRES_URL (see FlowJobsTests' PostgresTestDatabase): the suite runs with
/// it, or under CI (where it then fails), and is skipped otherwise.
private let postgresURL = ProcessInfo.processInfo.environment["FLOW_TEST_POSTGRES_URL"].flatMap {
    $0.isEmpty ? nil : $0
}
private let runsPostgresTests = postgresURL != nil || ProcessInfo.processInfo.environment["CI"] != nil

/// The loop that drives the stores the tests prepare their jobs with.
private let preparingLoop = EventLoop.startOnNewThread(name: "flow.jobs.tool-tests.postgres")

/// `flow-jobs` run as a process on a PostgreSQL schema each test prepares with the library: every
/// command takes a `postgresql://` URL as it takes a file, and finished jobs live in the history table.
@Suite("flow-jobs tool on PostgreSQL", .enabled(if: runsPostgresTests))
struct FlowJobsToolPostgresTests {
    let url: String
    let schema: String
    /// The database arguments of every command: the URL, then `--schema`.
    let database: [String]
    /// Prepared jobs: `queued` (due now, "default"), `delayed` (in an hour, "mail", unique key),
    /// `cancelled` (in the history table), and `completed` (claimed and finished, in the history table).
    var queued = JobID(rawValue: 0), delayed = JobID(rawValue: 0), cancelled = JobID(rawValue: 0)
    var completed = JobID(rawValue: 0)

    init() async throws {
        url = try #require(postgresURL, "CI is set but FLOW_TEST_POSTGRES_URL is not")
        schema = "tool_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        database = [url, "--schema", schema]
        let store = try await PostgresJobStore.open(url: url, on: preparingLoop, configuration: .init(schema: schema))
            .get()
        let enqueued = try await store.enqueue([
            NewJob(name: "send-report", queue: "default", payload: Data(#"{"to":"ops"}"#.utf8), maxAttempts: 5),
            NewJob(
                name: "send-mail", queue: "mail", payload: Data("later".utf8), priority: 3,
                runAt: Date().addingTimeInterval(3600), maxAttempts: 7, uniqueKey: "mail:42"),
            NewJob(name: "send-report", queue: "default", payload: Data("to cancel".utf8), maxAttempts: 2),
            NewJob(name: "archive", queue: "archive", payload: Data("done".utf8), maxAttempts: 1),
        ]).get()
        (queued, delayed, cancelled, completed) = (enqueued[0].id, enqueued[1].id, enqueued[2].id, enqueued[3].id)
        #expect(try await store.cancel(cancelled).get() == .cancelled)
        let claim = try await store.claim(
            ClaimRequest(
                slotsByQueue: ["archive": 1], names: ["archive"], worker: "tool-test", leaseDuration: .seconds(60),
                maxLeaseExpiries: 3)
        ).get()
        let lease = try #require(claim.jobs.first.map { JobLease(id: $0.id, fence: $0.fence) })
        _ = try await store.finish(lease, outcome: .completed, effects: nil).get()
        try await store.close().get()
    }

    @Test func listInspectAndStatsReadUnfinishedAndFinishedJobs() throws {
        let all = try flowJobsJSON([PrintedJob].self, ["list"] + database)
        #expect(all.map(\.id) == [queued, delayed, cancelled, completed].map(\.rawValue))
        #expect(all.map(\.state) == ["available", "scheduled", "cancelled", "completed"])
        #expect(
            try flowJobsJSON([PrintedJob].self, ["list"] + database + ["--state", "completed"]).map(\.id)
                == [completed.rawValue])
        let job = try flowJobsJSON(PrintedJob.self, ["inspect"] + database + ["#\(delayed.rawValue)"])
        #expect(job.name == "send-mail" && job.uniqueKey == "mail:42" && job.maxAttempts == 7 && job.payload == "later")

        let queues = try flowJobsJSON([PrintedQueue].self, ["stats"] + database)
        #expect(queues.map(\.queue) == ["archive", "default", "mail"])
        #expect(queues[0].counts == ["completed": 1] && queues[1].counts == ["available": 1, "cancelled": 1])
        #expect(queues[2].counts == ["scheduled": 1] && queues.allSatisfy { $0.lagSeconds >= 0 })
        let text = try flowJobs(["stats"] + database)
        #expect(text.status == 0 && text.output.hasPrefix("QUEUE"), "\(text.errorOutput)")
    }

    @Test func retryCancelDiscardAndPurgeChangeTheJobsAsOnSQLite() throws {
        let due = try flowJobs(["retry"] + database + [String(delayed.rawValue)])
        #expect(due.status == 0 && due.output == "job \(delayed.rawValue) is due now\n", "\(due.errorOutput)")
        let runAt = try flowJobsJSON(PrintedJob.self, ["inspect"] + database + [String(delayed.rawValue)]).runAt
        let dueAt = try Date(runAt, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        #expect(dueAt <= Date())

        struct Answer: Decodable { var id: Int64; var action: String; var newID: Int64? }
        let again = try flowJobsJSON(Answer.self, ["retry"] + database + [String(cancelled.rawValue)])
        let copy = try #require(again.newID)
        #expect(again.action == "enqueued again" && copy > completed.rawValue)

        let discarded = try flowJobs(["discard"] + database + [String(queued.rawValue), "--reason", "customer left"])
        #expect(discarded.status == 0 && discarded.output == "job \(queued.rawValue) discarded\n", "\(discarded.errorOutput)")
        let job = try flowJobsJSON(PrintedJob.self, ["inspect"] + database + [String(queued.rawValue)])
        #expect(job.state == "discarded" && job.lastError == "customer left")
        // It left the table of unfinished jobs: no worker can claim it, and discarding again is refused.
        let twice = try flowJobs(["discard"] + database + [String(queued.rawValue)])
        #expect(twice.status == 1 && twice.errorOutput.contains("has already finished: discarded"), "\(twice.errorOutput)")

        let cancelledNow = try flowJobs(["cancel"] + database + [String(copy)])
        #expect(cancelledNow.status == 0 && cancelledNow.output == "job \(copy) cancelled\n", "\(cancelledNow.errorOutput)")

        struct Deleted: Decodable { var deleted: Int }
        #expect(try flowJobsJSON(Deleted.self, ["purge"] + database + ["--older-than", "3600"]).deleted == 0)
        #expect(try flowJobsJSON(Deleted.self, ["purge"] + database + ["--state", "cancelled"]).deleted == 2)
        #expect(try flowJobsJSON(Deleted.self, ["purge"] + database).deleted == 2, "the completed and the discarded")
        let left = try flowJobsJSON([PrintedJob].self, ["list"] + database)
        #expect(left.map(\.id) == [delayed.rawValue] && left.map(\.state) == ["scheduled"])
    }

    @Test func retryingAWaitingJobWakesTheIdleWorkersOfAnotherProcessAsAnEnqueueDoes() async throws {
        // Another process's store, listening and without a safety poll: only a NOTIFY of the retry's
        // commit tells its workers that the delayed job (an hour away) is due now.
        let store = try await PostgresJobStore.open(
            url: url, on: preparingLoop, configuration: .init(schema: schema, safetyPollInterval: nil)
        ).get()
        let heard = DispatchSemaphore(value: 0)
        let observation = store.observe { notification in
            if case .enqueued(let queues) = notification, queues.contains("mail") { heard.signal() }
        }
        let retried = try flowJobs(["retry"] + database + [String(delayed.rawValue)])
        #expect(retried.status == 0, "\(retried.errorOutput)")
        expectSignal(heard, "the notification of the retried job's queue")
        observation.dispose()
        try await store.close().get()
    }

    @Test func theScheduleCommandsListPauseAndResumeTheSchedulesOfTheServer() async throws {
        let store = try await PostgresJobStore.open(url: url, on: preparingLoop, configuration: .init(schema: schema))
            .get()
        let job = NewJob(name: "report", queue: "default", payload: Data("{}".utf8), maxAttempts: 1)
        let firing = ScheduleFiring(
            name: "nightly", schedule: try JobSchedule(cron: "0 3 * * *", timeZone: "Europe/Stockholm"), job: job,
            overlap: .skip, catchUp: .latest)
        _ = try await store.fireSchedule(firing).get()
        try await store.close().get()

        let listed = try flowJobsJSON([PrintedSchedule].self, ["schedules"] + database)
        #expect(listed.map(\.name) == ["nightly"] && listed.map(\.paused) == [false])
        #expect(listed.first?.schedule == #"cron "0 3 * * *" in Europe/Stockholm"#)
        #expect(listed.first?.nextFireAt != nil)

        let paused = try flowJobs(["pause"] + database + ["nightly"])
        #expect(paused.status == 0 && paused.output == "schedule nightly paused\n", "\(paused.errorOutput)")
        #expect(try flowJobsJSON([PrintedSchedule].self, ["schedules"] + database).map(\.paused) == [true])
        let resumed = try flowJobsJSON(PrintedSchedule.self, ["resume"] + database + ["nightly"])
        #expect(resumed.name == "nightly" && !resumed.paused)

        let unknown = try flowJobs(["pause"] + database + ["weekly"])
        #expect(unknown.status == 1 && unknown.errorOutput.contains("no schedule named weekly"), "\(unknown.errorOutput)")
    }

    @Test func aServerThatCannotBeReachedEndsTheCommandWithStatusOne() throws {
        var components = try #require(URLComponents(string: url))
        components.password = "not-the-password"
        let run = try flowJobs(["list", try #require(components.string), "--schema", schema])
        #expect(run.status == 1)
        #expect(run.errorOutput.contains("password authentication failed"), "\(run.errorOutput)")
    }
}
