import Flow
import FlowJobs
import FlowTestSupport
import Foundation
import Synchronization
import Testing

/// A schedule as `flow-jobs schedules --json` prints it.
struct PrintedSchedule: Decodable {
    var name: String
    var schedule: String
    var nextFireAt: String?
    var lastFiredAt: String?
    var paused: Bool
}

/// `flow-jobs schedules`, `pause` and `resume` on a database where a store fired two schedules.
@Suite("flow-jobs tool: schedules")
struct ScheduleToolTests {
    let directory: TemporaryDirectory
    let database: String

    init() async throws {
        directory = try TemporaryDirectory()
        database = directory.path("jobs.sqlite")
        // A clock the test sets: the schedules are first seen two hours before 2027-01-15 08:00 UTC, and
        // fired at 08:00, a tick of the hourly one.
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let reading = Synchronization.Mutex(now.addingTimeInterval(-7200))
        let store = try SQLiteJobStore(
            path: database, configuration: .init(clock: JobClock { reading.withLock { $0 } }))
        let job = NewJob(name: "report", queue: "default", payload: Data("{}".utf8), maxAttempts: 1)
        let schedules = [
            ("hourly", try JobSchedule(cron: "0 * * * *")),
            ("nightly", try JobSchedule(cron: "0 3 * * *", timeZone: "Europe/Stockholm")),
        ]
        for time in [now.addingTimeInterval(-7200), now] {
            reading.withLock { $0 = time }
            for (name, schedule) in schedules {
                let firing = ScheduleFiring(name: name, schedule: schedule, job: job, overlap: .skip, catchUp: .latest)
                _ = try await store.fireSchedule(firing).get()
            }
        }
        try await store.close().get()
    }

    @Test func schedulesListsEachWithItsNextAndLastTickAndWhetherPaused() throws {
        let schedules = try flowJobsJSON([PrintedSchedule].self, ["schedules", database])
        #expect(schedules.map(\.name) == ["hourly", "nightly"])
        // Foundation on Linux names the UTC zone "GMT".
        #expect(schedules[0].schedule.hasPrefix(#"cron "0 * * * *" in "#))
        #expect(schedules[0].lastFiredAt == "2027-01-15T08:00:00.000Z")
        #expect(schedules[0].nextFireAt == "2027-01-15T09:00:00.000Z")
        #expect(schedules[1].schedule == #"cron "0 3 * * *" in Europe/Stockholm"#)
        #expect(schedules[1].lastFiredAt == nil)
        #expect(schedules[1].nextFireAt == "2027-01-16T02:00:00.000Z", "03:00 in Stockholm's winter time")
        #expect(schedules.allSatisfy { !$0.paused })

        let text = try flowJobs(["schedules", database])
        #expect(text.status == 0)
        let lines = text.output.split(separator: "\n")
        #expect(lines.first?.hasPrefix("NAME") == true && lines.count == 3, "\(text.output)")
        #expect(lines.contains { $0.hasPrefix("nightly") && $0.contains("Europe/Stockholm") })
    }

    @Test func pauseAndResumeChangeTheStoredFlag() throws {
        let paused = try flowJobs(["pause", database, "nightly"])
        #expect(paused.status == 0 && paused.output == "schedule nightly paused\n", "\(paused.errorOutput)")
        let listed = try flowJobsJSON([PrintedSchedule].self, ["schedules", database])
        #expect(listed.map(\.paused) == [false, true])

        let resumed = try flowJobsJSON(PrintedSchedule.self, ["resume", database, "nightly"])
        #expect(resumed.name == "nightly" && !resumed.paused)
        #expect(try flowJobsJSON([PrintedSchedule].self, ["schedules", database]).allSatisfy { !$0.paused })
    }

    @Test func anUnknownScheduleIsAnError() throws {
        let run = try flowJobs(["pause", database, "weekly"])
        #expect(run.status == 1)
        #expect(run.errorOutput.contains("no schedule named weekly"), "\(run.errorOutput)")
    }
}
