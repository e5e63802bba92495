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
        // Each commit adds a few pages to the log, far past the writer's catch-up size over the run.
        for _ in 0..<4_000 {
            _ = try await store.enqueue([job]).get()
            let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            largestLog = max(largestLog, size)
        }
        let boundPages = Int(SQLiteCheckpointer.writerCatchUpPages + SQLiteCheckpointer.thresholdPages)
        #expect(largestLog > 0)
        #expect(largestLog <= boundPages * frameBytes)
        try await store.close().get()
    }
}
