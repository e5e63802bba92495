import Flow
import FlowSystem
import Foundation
import Testing

/// Reflection of what holds a Flow loop reached the loop's lock-guarded queue and stopped the process.
@Suite("FlowSystem: printing the handles")
struct FlowSystemReflectionTests {
    @Test("an open file and the future that opened it print every way")
    func handlesPrint() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        #expect(FileManager.default.createFile(atPath: folder.file("file"), contents: Data([1, 2, 3])))
        try withLoopOnOwnThread(name: "test.printed.files") { loop in
            let opening = FileSystem.open(folder.file("file"), on: loop)
            let file = try #require(waitForResult(of: opening)).get()
            expectPrintedEveryWay([(file, "OpenFile"), (opening, "Future<OpenFile>")])
            _ = waitForResult(of: file.close())
        }
        #expect(openDescriptorCount(inside: folder.path) == 0)
    }
}

/// The future's result, waiting up to the hang guard.
private func waitForResult<Value>(of future: Future<Value>) -> Result<Value>? {
    let done = DispatchSemaphore(value: 0)
    future.onResult(on: .none) { _ in done.signal() }
    guard done.wait(timeout: .now() + hangGuard) == .success else { return nil }
    return future.result
}
