import Flow
@testable import FlowJobs
import FlowTestSupport
import Foundation
import Testing

private let job = NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 1)

@Suite("SQLiteCheckpointer: the write-ahead log under a writer that never pauses")
struct SQLiteCheckpointerCadenceTests {
    @Test func theLogStartsOverInsteadOfGrowingWhileEnqueuesCommitOneAfterAnother() async throws {
        let directory = TemporaryDirectory()
        let path = directory.path("jobs.sqlite")
        let store = try SQLiteJobStore(path: path)
        let frameBytes = 24 + 4096
        var largestLog = 0
        // Each commit adds about three pages to the log: a log that never started over would pass
        // 20,000 pages over the run, four times the bound below.
        for _ in 0..<8_000 {
            _ = try await store.enqueue([job]).get()
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            largestLog = max(largestLog, size)
        }
        // Twice the size at which the writer checkpoints: the checkpointer's thread may hold the
        // checkpoint for a while on a loaded machine, and the writer's own attempt then waits for a
        // later batch.
        let boundPages = 2 * Int(SQLiteCheckpointer.writerCatchUpPages + SQLiteCheckpointer.thresholdPages)
        #expect(largestLog > 0)
        #expect(largestLog <= boundPages * frameBytes)
        try await store.close().get()
    }
}
