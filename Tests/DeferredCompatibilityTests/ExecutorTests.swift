import Deferred
import Dispatch
import Foundation
import XCTest

final class ExecutorTests: XCTestCase {
    func testOperationQueue() {
        let queue = OperationQueue()
        let ran = expectation(description: "upon ran")
        var onQueue = false
        Deferred(filledWith: 1).upon(queue) { _ in
            onQueue = OperationQueue.current === queue
            ran.fulfill()
        }
        wait(for: [ran], timeout: 10)
        XCTAssertTrue(onQueue)
    }

    func testRunLoopOfTheMainThread() {
        let ran = expectation(description: "upon ran")
        var onMain = false
        Deferred(filledWith: 1).upon(RunLoop.main) { _ in
            onMain = Thread.isMainThread
            ran.fulfill()
        }
        wait(for: [ran], timeout: 10)
        XCTAssertTrue(onMain)
    }

    func testAnyIsAConcurrentQueue() {
        let deferred = Deferred<Int>()
        let ran = expectation(description: "upon ran")
        ran.expectedFulfillmentCount = 2
        let bothInside = DispatchGroup()
        bothInside.enter()
        bothInside.enter()
        for _ in 0 ..< 2 {
            deferred.upon(.any()) { _ in
                bothInside.leave()
                // Both closures are inside at once: the queue runs them concurrently.
                _ = bothInside.wait(timeout: .now() + 10)
                ran.fulfill()
            }
        }
        deferred.fill(with: 1)
        wait(for: [ran], timeout: 20)
        XCTAssertEqual(bothInside.wait(timeout: .now()), .success)
    }

    func testSubmitAWorkItem() {
        let ran = expectation(description: "work item ran")
        let item = DispatchWorkItem { ran.fulfill() }
        let executor: Executor = CountingExecutor()
        executor.submit(item)
        wait(for: [ran], timeout: 10)
    }

    func testDefaultExecutorOfUpon() {
        XCTAssertEqual(Deferred<Int>.defaultUponExecutor.label, DispatchQueue.global(qos: .utility).label)
    }
}
