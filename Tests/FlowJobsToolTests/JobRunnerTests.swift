import Flow
import FlowJobs
import FlowTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The JobRunner example run as processes: `enqueue`, then `work` until a signal.
@Suite("JobRunner example", .serialized)
struct JobRunnerTests {
    let directory: TemporaryDirectory
    let database: String

    init() throws {
        directory = try TemporaryDirectory()
        database = directory.path("jobs.sqlite")
    }

    /// Enqueues with JobRunner and returns the printed ids.
    func enqueue(_ arguments: [String]) throws -> [Int64] {
        let run = try jobRunner(["enqueue", "--database", database] + arguments)
        try #require(run.status == 0, "\(run.errorOutput)")
        return run.output.split(separator: "\n").compactMap { line in
            line.hasPrefix("enqueued job #") ? Int64(line.dropFirst("enqueued job #".count)) : nil
        }
    }

    /// Starts a worker and waits until it says it is ready.
    func startWorker(_ arguments: [String] = []) throws -> ExampleProcess {
        let worker = try ExampleProcess("JobRunner", arguments: ["work", "--database", database] + arguments)
        #expect(worker.readLine()?.hasPrefix("worker ready: \(database)") == true)
        return worker
    }

    @Test func theWorkerRunsEnqueuedJobsRetriesAFailureAndStopsOnSIGTERM() throws {
        let ids = try enqueue(["--count", "2", "--message", "hi"]) + enqueue(["--fail-first", "1", "--message", "late"])
        #expect(ids.count == 3)
        let worker = try startWorker()
        defer { worker.stop() }
        var completed: Set<Int64> = []
        var lines: [String] = []
        while completed.count < 3, let line = worker.readLine() {
            lines.append(line)
            if line.hasSuffix(" completed after 1 attempt") || line.hasSuffix(" completed after 2 attempts"),
               let id = Int64(line.dropFirst("job #".count).prefix { $0.isNumber }) {
                completed.insert(id)
            }
        }
        #expect(completed == Set(ids), "\(lines.joined(separator: "\n"))")
        #expect(lines.contains("job #\(ids[2]) attempt 1 failed (attempt 1 fails on purpose): retrying"))
        #expect(lines.contains("job #\(ids[2]) completed after 2 attempts"))
        #expect(lines.contains("job #\(ids[2]): late"))

        worker.send(SIGTERM)
        #expect(worker.readLine() == "received SIGTERM: draining for up to 10.0 s")
        #expect(worker.readLine() == "stopped")
        #expect(worker.waitForExit() == 0)

        let queues = try flowJobsJSON([PrintedQueue].self, ["stats", database])
        #expect(queues.map(\.counts) == [["completed": 3]])
    }

    @Test func aJobEnqueuedByAnotherProcessWhileTheWorkerRunsIsRun() throws {
        let worker = try startWorker()
        defer { worker.stop() }
        let id = try #require(try enqueue(["--message", "from afar"]).first)
        #expect(worker.readLine { $0 == "job #\(id) completed after 1 attempt" } != nil)
        worker.send(SIGINT)
        #expect(worker.readLine { $0 == "stopped" } != nil)
        #expect(worker.waitForExit() == 0)
    }

    @Test func aDrainGivesBackAJobStillRunningAtTheEndOfTheGracePeriod() throws {
        let id = try #require(try enqueue(["--work-milliseconds", "600000"]).first)
        let worker = try startWorker(["--grace-period", "0.2"])
        defer { worker.stop() }
        #expect(worker.readLine() == "job #\(id) attempt 1: started")
        worker.send(SIGTERM)
        #expect(worker.readLine() == "received SIGTERM: draining for up to 0.2 s")
        #expect(worker.readLine() == "job #\(id) given back, to run again at once")
        #expect(worker.readLine() == "stopped")
        #expect(worker.waitForExit() == 0)
        let job = try flowJobsJSON(PrintedJob.self, ["inspect", database, String(id)])
        #expect(job.state == "available" && job.attempt == 0, "given back, the attempt not counted")
    }

    @Test func aJobWhoseWorkerWasKilledRunsAgainInTheNextWorkerAfterTheLease() throws {
        let id = try #require(try enqueue(["--work-milliseconds", "1500"]).first)
        let killed = try startWorker(["--lease", "0.5"])
        #expect(killed.readLine() == "job #\(id) attempt 1: started")
        killed.stop()  // SIGKILL: no drain, the job stays running until its lease ends

        let worker = try startWorker(["--lease", "0.5"])
        defer { worker.stop() }
        #expect(worker.readLine { $0 == "job #\(id) completed after 2 attempts" } != nil)
        worker.send(SIGTERM)
        #expect(worker.readLine { $0 == "stopped" } != nil)
        #expect(worker.waitForExit() == 0)
    }

    @Test func aDatabaseThatCannotBeOpenedIsAnErrorAndBadOptionsAreUsageErrors() throws {
        let nowhere = directory.path("no/such/directory/jobs.sqlite")
        let run = try jobRunner(["enqueue", "--database", nowhere])
        #expect(run.status == 1 && run.errorOutput.contains("cannot open the job database"), "\(run.errorOutput)")
        let badCount = try jobRunner(["enqueue", "--database", database, "--count", "0"])
        #expect(badCount.status == 64 && badCount.errorOutput.contains("--count must be at least 1"))
        let badLease = try jobRunner(["work", "--database", database, "--lease", "0"])
        #expect(badLease.status == 64 && badLease.errorOutput.contains("--lease must be a positive number"))
    }
}
