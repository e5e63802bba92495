import Deferred
import Task
import XCTest

final class ImportTaskTests: XCTestCase {
    func testTaskNamesDeferredsTaskWithBothImports() {
        let promise = Task<Int>.Promise()
        let task: Task<Int> = Task(promise)
        promise.succeed(with: 3)
        XCTAssertEqual(try task.wait(until: .distantFuture)?.get(), 3)
        let swiftTask = _Concurrency.Task { 1 }
        _ = swiftTask
    }
}
