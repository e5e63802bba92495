// Deferred code imports both modules of Deferred's product.
import Deferred
import Task
import XCTest

final class ImportTaskTests: XCTestCase {
    func testTaskNamesDeferredsTaskWithBothImports() {
        let promise = Task<Int>.Promise()
        let task: Task<Int> = Task(promise)
        promise.succeed(with: 3)
        XCTAssertEqual(try task.wait(until: .distantFuture)?.get(), 3)
    }

    func testSwiftsTaskIsSpelledInFull() {
        let finished = expectation(description: "Swift's task ran")
        let swiftTask = _Concurrency.Task {
            finished.fulfill()
        }
        wait(for: [finished], timeout: 10)
        _ = swiftTask
    }

    func testTaskWithASynchronousClosureIsDeferredsCatching() {
        let plain = Task { 1 }
        XCTAssertEqual(try plain.peek()?.get(), 1)
    }
}
