// The suite of a Deferred 4.x user: XCTest, Swift 5 mode, captured `var`s mutated inside callbacks,
// defaulted executors. It runs in one process to the end.
import Deferred
import Dispatch
import XCTest

final class DeferredTests: XCTestCase {
    func testDestroyedWithoutBeingFilled() {
        var deferred: Deferred<Int>? = Deferred()
        weak let weakDeferred = deferred
        deferred = nil
        XCTAssertNil(weakDeferred)
    }

    func testWaitWithTimeoutReturnsNilWhenNotFilled() {
        let deferred = Deferred<Int>()
        XCTAssertNil(deferred.wait(until: .now() + .milliseconds(20)))
    }

    func testPeekAndIsFilled() {
        let deferred = Deferred<Int>()
        XCTAssertNil(deferred.peek())
        XCTAssertFalse(deferred.isFilled)
        deferred.fill(with: 1)
        XCTAssertEqual(deferred.peek(), 1)
        XCTAssertTrue(deferred.isFilled)
    }

    func testFillingTwiceKeepsTheFirstValue() {
        let deferred = Deferred<Int>()
        XCTAssertTrue(deferred.fill(with: 1))
        XCTAssertFalse(deferred.fill(with: 2))
        XCTAssertEqual(deferred.wait(until: .distantFuture), 1)
    }

    func testUponRunsEveryClosureOnceFilled() {
        let deferred = Deferred<Int>()
        let allRan = expectation(description: "every upon ran")
        allRan.expectedFulfillmentCount = 10
        let lock = NSLock()
        var seen = [Int]()
        for _ in 0 ..< 10 {
            deferred.upon { value in
                lock.lock()
                seen.append(value)
                lock.unlock()
                allRan.fulfill()
            }
        }
        deferred.fill(with: 3)
        wait(for: [allRan], timeout: 10)
        XCTAssertEqual(seen, Array(repeating: 3, count: 10))
    }

    func testUponAfterFillRuns() {
        let deferred = Deferred(filledWith: 1)
        let ran = expectation(description: "upon ran")
        var value = 0
        deferred.upon { filled in
            value = filled
            ran.fulfill()
        }
        wait(for: [ran], timeout: 10)
        XCTAssertEqual(value, 1)
    }

    func testUponOnAQueueRunsThereInOrder() {
        let queue = DispatchQueue(label: "deferred.compat.serial")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let deferred = Deferred<Int>()
        let ran = expectation(description: "upon ran")
        ran.expectedFulfillmentCount = 3
        var order = [Int]()
        var onQueue = true
        for index in 0 ..< 3 {
            deferred.upon(queue) { _ in
                onQueue = onQueue && DispatchQueue.getSpecific(key: key) == 7
                order.append(index)
                ran.fulfill()
            }
        }
        deferred.fill(with: 1)
        wait(for: [ran], timeout: 10)
        XCTAssertEqual(order, [0, 1, 2])
        XCTAssertTrue(onQueue)
    }

    func testUponMainQueue() {
        let deferred = Deferred<Int>()
        let ran = expectation(description: "upon ran on main")
        var wasMainThread = false
        deferred.upon(.main) { _ in
            wasMainThread = Thread.isMainThread
            ran.fulfill()
        }
        DispatchQueue.global().async { deferred.fill(with: 1) }
        wait(for: [ran], timeout: 10)
        XCTAssertTrue(wasMainThread)
    }

    func testCopiesShareOneValue() {
        let original = Deferred<Int>()
        let copy = original
        original.fill(with: 2)
        XCTAssertEqual(copy.peek(), 2)
    }

    func testOptionalValues() {
        let filledWithNil = Deferred<Int?>(filledWith: nil)
        XCTAssertEqual(filledWithNil.peek(), .some(nil))
        XCTAssertTrue(filledWithNil.isFilled)
    }

    func testSimultaneousFillsLetExactlyOneWin() {
        let deferred = Deferred<Int>()
        let lock = NSLock()
        var winners = [Int]()
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            if deferred.fill(with: index) {
                lock.lock()
                winners.append(index)
                lock.unlock()
            }
        }
        XCTAssertEqual(winners.count, 1)
        XCTAssertEqual(deferred.peek(), winners.first)
    }

    func testVoidFill() {
        let deferred = Deferred<Void>()
        XCTAssertTrue(deferred.fill())
        XCTAssertFalse(deferred.fill())
        XCTAssertNotNil(deferred.peek())
    }

    func testDebugDescription() {
        XCTAssertEqual(String(reflecting: Deferred(filledWith: 42)), "Deferred(42)")
        XCTAssertEqual(String(reflecting: Deferred<Int>()), "Deferred(not filled)")
        XCTAssertEqual(String(reflecting: Deferred<Void>(filledWith: ())), "Deferred(filled)")
        XCTAssertEqual(String(reflecting: Future<Void>(value: ())), "Future(filled)")
        XCTAssertEqual(String(reflecting: Future<String>(value: "a")), "Future(\"a\")")
    }

    func testReflectionShowsTheValueAsAnOptionalOrIsFilled() {
        let filled = Mirror(reflecting: Deferred(filledWith: 42))
        XCTAssertEqual(filled.displayStyle, .optional)
        XCTAssertEqual(filled.children.first?.label, "value")
        XCTAssertEqual(filled.children.first?.value as? Int, 42)

        let pending = Mirror(reflecting: Deferred<Int>())
        XCTAssertEqual(pending.children.first?.label, "isFilled")
        XCTAssertEqual(pending.children.first?.value as? Bool, false)

        let void = Mirror(reflecting: Future<Void>(value: ()))
        XCTAssertEqual(void.children.first?.label, "isFilled")
        XCTAssertEqual(void.children.first?.value as? Bool, true)

        let task = Mirror(reflecting: Task<Int>(success: 3))
        XCTAssertEqual(task.displayStyle, .optional)
        XCTAssertEqual(task.children.first?.label, "value")
    }

    func testMustFill() {
        let deferred = Deferred<Int>()
        deferred.mustFill(with: 1)
        XCTAssertEqual(deferred.peek(), 1)
    }

    func testDeferredIsAPromiseAndAFuture() {
        func fill<P: PromiseProtocol>(_ promise: P, with value: P.Value) -> Bool {
            promise.fill(with: value)
        }
        func read<F: FutureProtocol>(_ future: F) -> F.Value? {
            future.peek()
        }
        let deferred = Deferred<Int>()
        XCTAssertTrue(fill(deferred, with: 5))
        XCTAssertEqual(read(deferred), 5)
    }
}
