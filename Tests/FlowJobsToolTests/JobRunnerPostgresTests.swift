import Flow
import FlowTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The server of FLOW_TEST_POSTGRES_URL (see FlowJobsTests' PostgresTestDatabase): the suite runs with
/// it, or under CI (where it then fails), and is skipped otherwise.
private let postgresURL = ProcessInfo.processInfo.environment["FLOW_TEST_POSTGRES_URL"].flatMap {
    $0.isEmpty ? nil : $0
}
private let runsPostgresTests = postgresURL != nil || ProcessInfo.processInfo.environment["CI"] != nil

/// The JobRunner example on a PostgreSQL database: the same commands with a `postgresql://` URL.
@Suite("JobRunner example on PostgreSQL", .serialized, .enabled(if: runsPostgresTests))
struct JobRunnerPostgresTests {
    @Test func aWorkerRunsTheJobsAnotherProcessEnqueuedInPostgreSQL() throws {
        let url = try #require(postgresURL, "CI is set but FLOW_TEST_POSTGRES_URL is not")
        let schema = "runner_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
        let database = ["--database", url, "--schema", String(schema)]
        let enqueued = try jobRunner(["enqueue"] + database + ["--count", "2", "--message", "on postgres"])
        try #require(enqueued.status == 0, "\(enqueued.errorOutput)")
        let ids = enqueued.output.split(separator: "\n").compactMap { line in
            line.hasPrefix("enqueued job #") ? Int64(line.dropFirst("enqueued job #".count)) : nil
        }
        #expect(ids.count == 2)

        let worker = try ExampleProcess("JobRunner", arguments: ["work"] + database)
        defer { worker.stop() }
        let ready = worker.readLine() ?? ""
        #expect(ready.hasPrefix("worker ready: postgresql://") && ready.hasSuffix("schema \(schema), 4 at a time"))
        if let password = URLComponents(string: url)?.password {
            #expect(!ready.contains(":\(password)@"), "the first line shows the password: \(ready)")
        }
        for id in ids {
            #expect(worker.readLine { $0 == "job #\(id) completed after 1 attempt" } != nil)
        }
        // A job enqueued while the worker idles wakes it through the enqueue's notification.
        let later = try jobRunner(["enqueue"] + database + ["--message", "later"])
        let laterID = try #require(Int64(later.output.split(separator: "#").last?.prefix { $0.isNumber } ?? ""))
        #expect(worker.readLine { $0 == "job #\(laterID) completed after 1 attempt" } != nil)
        worker.send(SIGTERM)
        #expect(worker.readLine { $0 == "stopped" } != nil)
        #expect(worker.waitForExit() == 0)
    }

    @Test func aServerThatCannotBeReachedEndsTheCommandWithStatusOne() throws {
        let url = try #require(postgresURL, "CI is set but FLOW_TEST_POSTGRES_URL is not")
        var components = try #require(URLComponents(string: url))
        components.password = "not-the-password"
        let run = try jobRunner(["enqueue", "--database", try #require(components.string)])
        #expect(run.status == 1)
        #expect(run.errorOutput.contains("password authentication failed"), "\(run.errorOutput)")
    }
}
