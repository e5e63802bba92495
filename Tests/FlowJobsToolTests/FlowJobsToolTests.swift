import Flow
import FlowJobs
import FlowTestSupport
import Foundation
import Testing

/// `flow-jobs` run as a process on a database each test prepares with the library.
@Suite("flow-jobs tool")
struct FlowJobsToolTests {
    let directory: TemporaryDirectory
    let database: String
    /// Prepared jobs: `queued` (due now, "default"), `delayed` (in an hour, "mail", unique key),
    /// `cancelled`, and `binary` (a payload that is not UTF-8, "mail").
    var queued = JobID(rawValue: 0), delayed = JobID(rawValue: 0), cancelled = JobID(rawValue: 0)
    var binary = JobID(rawValue: 0)

    init() async throws {
        directory = try TemporaryDirectory()
        database = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(path: database)
        let enqueued = try await store.enqueue([
            NewJob(name: "send-report", queue: "default", payload: Data(#"{"to":"ops"}"#.utf8), maxAttempts: 5),
            NewJob(
                name: "send-mail", queue: "mail", payload: Data("later".utf8), priority: 3,
                runAt: Date().addingTimeInterval(3600), maxAttempts: 7, uniqueKey: "mail:42"),
            NewJob(name: "send-report", queue: "default", payload: Data("to cancel".utf8), maxAttempts: 2),
            NewJob(name: "send-mail", queue: "mail", payload: Data([0xff, 0x00, 0xfe]), maxAttempts: 1),
        ]).get()
        (queued, delayed, cancelled, binary) = (enqueued[0].id, enqueued[1].id, enqueued[2].id, enqueued[3].id)
        #expect(try await store.cancel(cancelled).get() == .cancelled)
        try await store.close().get()
    }

    @Test func listPrintsEveryJobOldestFirstAndFiltersByStateAndQueue() throws {
        let all = try flowJobsJSON([PrintedJob].self, ["list", database])
        #expect(all.map(\.id) == [queued, delayed, cancelled, binary].map(\.rawValue))
        #expect(all.map(\.state) == ["available", "scheduled", "cancelled", "available"])
        #expect(all[0].payload == #"{"to":"ops"}"# && all[0].payloadEncoding == "utf8")
        #expect(all[3].payload == Data([0xff, 0x00, 0xfe]).base64EncodedString() && all[3].payloadEncoding == "base64")
        #expect(try flowJobsJSON([PrintedJob].self, ["list", database, "--state", "cancelled"]).map(\.id) == [cancelled.rawValue])
        #expect(try flowJobsJSON([PrintedJob].self, ["list", database, "--queue", "mail"]).map(\.id) == [delayed, binary].map(\.rawValue))
        #expect(try flowJobsJSON([PrintedJob].self, ["list", database, "--limit", "1"]).count == 1)

        let text = try flowJobs(["list", database])
        #expect(text.status == 0)
        let lines = text.output.split(separator: "\n")
        #expect(lines.first?.hasPrefix("ID") == true && lines.count == 5, "\(text.output)")
        #expect(lines.contains { $0.contains("send-mail") && $0.contains("scheduled") && $0.contains("0/7") })
    }

    @Test func inspectPrintsOneJobsWholeRecord() throws {
        let job = try flowJobsJSON(PrintedJob.self, ["inspect", database, "#\(delayed.rawValue)"])
        #expect(job.name == "send-mail" && job.queue == "mail" && job.state == "scheduled")
        #expect(job.uniqueKey == "mail:42" && job.maxAttempts == 7 && job.payload == "later")

        let text = try flowJobs(["inspect", database, String(delayed.rawValue)])
        #expect(text.status == 0)
        #expect(text.output.contains("unique key: mail:42\n") && text.output.contains("payload (utf8): later\n"))
    }

    @Test func statsCountsEachQueuesJobsByState() throws {
        let queues = try flowJobsJSON([PrintedQueue].self, ["stats", database])
        #expect(queues.map(\.queue) == ["default", "mail"])
        #expect(queues[0].counts == ["available": 1, "cancelled": 1] && queues[0].total == 2)
        #expect(queues[1].counts == ["available": 1, "scheduled": 1] && queues[1].total == 2)
        #expect(queues.allSatisfy { $0.lagSeconds >= 0 })
        let text = try flowJobs(["stats", database])
        #expect(text.status == 0 && text.output.hasPrefix("QUEUE"), "\(text.output)")
    }

    @Test func cancelCancelsAQueuedJobAndRefusesAFinishedOne() throws {
        let run = try flowJobs(["cancel", database, String(queued.rawValue)])
        #expect(run.status == 0 && run.output == "job \(queued.rawValue) cancelled\n")
        #expect(try flowJobsJSON(PrintedJob.self, ["inspect", database, String(queued.rawValue)]).state == "cancelled")

        let again = try flowJobs(["cancel", database, String(queued.rawValue)])
        #expect(again.status == 1)
        #expect(again.errorOutput.contains("job \(queued.rawValue) had already finished: cancelled"), "\(again.errorOutput)")
    }

    @Test func retryMakesAWaitingJobDueAndEnqueuesAFinishedOneAgain() throws {
        let due = try flowJobs(["retry", database, String(delayed.rawValue)])
        #expect(due.status == 0 && due.output == "job \(delayed.rawValue) is due now\n", "\(due.errorOutput)")
        let job = try flowJobsJSON(PrintedJob.self, ["inspect", database, String(delayed.rawValue)])
        let runAt = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(job.runAt)
        #expect(runAt <= Date() && job.state == "scheduled", "due now, not in an hour: \(job.runAt)")

        struct Answer: Decodable { var id: Int64; var action: String; var newID: Int64? }
        let answer = try flowJobsJSON(Answer.self, ["retry", database, String(cancelled.rawValue)])
        let newID = try #require(answer.newID)
        #expect(answer.action == "enqueued again" && newID > binary.rawValue)
        let copy = try flowJobsJSON(PrintedJob.self, ["inspect", database, String(newID)])
        #expect(copy.state == "available" && copy.attempt == 0 && copy.name == "send-report" && copy.payload == "to cancel")
        #expect(copy.maxAttempts == 2)
        #expect(try flowJobsJSON(PrintedJob.self, ["inspect", database, String(cancelled.rawValue)]).state == "cancelled",
                "the finished job stays as it was")
    }

    @Test func discardDiscardsAQueuedJobWithTheReasonRecorded() throws {
        let run = try flowJobs(["discard", database, String(delayed.rawValue), "--reason", "customer left"])
        #expect(run.status == 0 && run.output == "job \(delayed.rawValue) discarded\n", "\(run.errorOutput)")
        let job = try flowJobsJSON(PrintedJob.self, ["inspect", database, String(delayed.rawValue)])
        #expect(job.state == "discarded" && job.lastError == "customer left")

        let again = try flowJobs(["discard", database, String(delayed.rawValue)])
        #expect(again.status == 1 && again.errorOutput.contains("has already finished: discarded"), "\(again.errorOutput)")
    }

    @Test func purgeDeletesFinishedJobsOnly() throws {
        #expect(try flowJobs(["discard", database, String(binary.rawValue)]).status == 0)
        let tooRecent = try flowJobs(["purge", database, "--older-than", "3600"])
        #expect(tooRecent.status == 0 && tooRecent.output == "0 finished jobs deleted\n")
        struct Deleted: Decodable { var deleted: Int }
        #expect(try flowJobsJSON(Deleted.self, ["purge", database, "--state", "cancelled"]).deleted == 1)
        #expect(try flowJobsJSON(Deleted.self, ["purge", database]).deleted == 1, "the discarded one")
        #expect(try flowJobsJSON([PrintedJob].self, ["list", database]).map(\.id) == [queued, delayed].map(\.rawValue))
        let unfinished = try flowJobs(["purge", database, "--state", "available"])
        #expect(unfinished.status == 64 && unfinished.errorOutput.contains("--state must be a finished state"))
    }

    @Test func anUnknownJobIsAnErrorNamingIt() throws {
        for command in ["inspect", "retry", "cancel", "discard"] {
            let run = try flowJobs([command, database, "999"])
            #expect(run.status == 1, "\(command)")
            #expect(run.errorOutput.contains("no job has the id 999 in this database"), "\(command): \(run.errorOutput)")
        }
        let malformed = try flowJobs(["inspect", database, "forty-two"])
        #expect(malformed.status == 64 && malformed.errorOutput.contains("forty-two"), "\(malformed.errorOutput)")
    }

    @Test func aMissingOrDamagedDatabaseIsAnErrorAndNothingIsCreated() throws {
        let missing = directory.path("missing.sqlite")
        let run = try flowJobs(["list", missing])
        #expect(run.status == 1 && run.errorOutput.contains("cannot open the job database at \(missing)"), "\(run.errorOutput)")
        #expect(!FileManager.default.fileExists(atPath: missing))

        let damaged = directory.path("damaged.sqlite")
        try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: damaged))
        let corrupt = try flowJobs(["stats", damaged])
        #expect(corrupt.status == 1 && corrupt.errorOutput.contains("damaged or not a database"), "\(corrupt.errorOutput)")

        let unknown = try flowJobs(["frobnicate", database])
        #expect(unknown.status == 64, "\(unknown.errorOutput)")
    }
}

@Suite("flow-jobs and JobRunner help")
struct JobsHelpTests {
    @Test func flowJobsHelpListsEveryCommand() throws {
        let run = try flowJobs(["--help"])
        #expect(run.status == 0)
        for command in ["list", "inspect", "stats", "retry", "cancel", "discard", "purge"] {
            #expect(run.output.contains("  \(command) "), "flow-jobs --help does not list \(command): \(run.output)")
        }
        let list = try flowJobs(["list", "--help"])
        #expect(list.status == 0 && list.output.contains("--json") && list.output.contains("--state"))
    }

    @Test func jobRunnerHelpListsBothCommandsAndTheirOptions() throws {
        let run = try jobRunner(["--help"])
        #expect(run.status == 0 && run.output.contains("enqueue") && run.output.contains("work"), "\(run.output)")
        let work = try jobRunner(["work", "--help"])
        for option in ["--database", "--concurrency", "--lease", "--grace-period"] {
            #expect(work.output.contains(option), "JobRunner work --help does not describe \(option)")
        }
    }
}
