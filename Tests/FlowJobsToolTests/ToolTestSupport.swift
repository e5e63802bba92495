import Flow
import FlowJobs
import FlowTestSupport
import Foundation
import Testing

/// A fresh directory for one test's database, removed at the end.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("flow-jobs-tool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// Runs `flow-jobs` with `arguments` to its end.
func flowJobs(_ arguments: [String]) throws -> ProbeRun {
    try runProbe(at: try builtExecutable("flow-jobs").path, arguments: arguments)
}

/// Runs `flow-jobs` with `arguments` plus `--json`, expects success, and decodes its output.
func flowJobsJSON<Value: Decodable>(_ type: Value.Type, _ arguments: [String]) throws -> Value {
    let run = try flowJobs(arguments + ["--json"])
    try #require(run.status == 0, "flow-jobs \(arguments.joined(separator: " ")): \(run.errorOutput)")
    return try JSONDecoder().decode(Value.self, from: Data(run.output.utf8))
}

/// Runs `JobRunner` with `arguments` to its end.
func jobRunner(_ arguments: [String]) throws -> ProbeRun {
    try runProbe(at: try builtExecutable("JobRunner").path, arguments: arguments)
}

/// A job as `flow-jobs --json` prints it (the fields the tests read).
struct PrintedJob: Decodable, Equatable {
    var id: Int64
    var name: String
    var queue: String
    var state: String
    var attempt: Int
    var maxAttempts: Int
    var uniqueKey: String?
    var lastError: String?
    var payload: String
    var payloadEncoding: String
    var runAt: String
}

/// A queue's figures as `flow-jobs stats --json` prints them.
struct PrintedQueue: Decodable {
    var queue: String
    var counts: [String: Int]
    var total: Int
    var lagSeconds: Double
}
