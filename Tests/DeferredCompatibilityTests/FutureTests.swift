import Deferred
import Dispatch
import XCTest

/// An executor of a user's own, written as Deferred users write one (a closure without `@Sendable`):
/// it counts what it is given and runs it at once.
final class CountingExecutor: Executor {
    private let lock = NSLock()
    private var count = 0

    var submissions: Int {
        lock.lock()
        defer { lock.unlock() }
        return count
    }

    func submit(_ body: @escaping () -> Void) {
        lock.lock()
        count += 1
        lock.unlock()
        body()
    }
}

final class FutureTests: XCTestCase {
    func testFutureOfAValueIsFilled() {
        XCTAssertEqual(Future(value: 1).peek(), 1)
        XCTAssertEqual(Future(2).wait(until: .now()), 2)
    }

    func testFutureIsAReadOnlyViewOfADeferred() {
        let deferred = Deferred<Int>()
        let future = Future(deferred)
        XCTAssertNil(future.peek())
        deferred.fill(with: 3)
        XCTAssertEqual(future.peek(), 3)
        XCTAssertEqual(deferred.eraseToFuture().peek(), 3)
    }

    func testNeverIsNeverFilled() {
        let never = Future<Int>.never
        var ran = false
        never.upon { _ in ran = true }
        XCTAssertNil(never.wait(until: .now() + .milliseconds(10)))
        XCTAssertFalse(ran)
    }

    func testMap() {
        let deferred = Deferred<Int>()
        let mapped = deferred.map(upon: .any()) { "\($0 * 2)" }
        deferred.fill(with: 21)
        XCTAssertEqual(mapped.wait(until: .now() + 10), "42")
    }

    func testAndThenDeliversEveryHopThroughTheExecutor() {
        let executor = CountingExecutor()
        let first = Deferred<Int>()
        let second = Deferred<String>()
        let chained = first.andThen(upon: executor) { value in second.map(upon: .any()) { "\(value) \($0)" } }
        first.fill(with: 1)
        second.fill(with: "two")
        XCTAssertEqual(chained.wait(until: .now() + 10), "1 two")
        // One hop to start the next step, one to deliver its value.
        XCTAssertEqual(executor.submissions, 2)
    }

    func testEveryRecomputesAtEachRead() {
        let deferred = Deferred<Int>()
        var calls = 0
        let lock = NSLock()
        let doubled = deferred.every { (value: Int) -> Int in
            lock.lock()
            calls += 1
            lock.unlock()
            return value * 2
        }
        deferred.fill(with: 2)
        XCTAssertEqual(doubled.peek(), 4)
        XCTAssertEqual(doubled.peek(), 4)
        XCTAssertEqual(calls, 2)
    }

    func testIgnored() {
        let deferred = Deferred<Int>()
        let ignored = deferred.ignored()
        XCTAssertNil(ignored.peek())
        deferred.fill(with: 1)
        XCTAssertNotNil(ignored.peek())
    }

    func testAndCombinesUpToEight() {
        let a = Deferred<Int>()
        let pair = a.and(Future(value: "b"))
        let eight = a.and(Future(value: 2), Future(value: 3), Future(value: 4), Future(value: 5),
                          Future(value: 6), Future(value: 7), Future(value: 8))
        a.fill(with: 1)
        XCTAssertEqual(pair.wait(until: .now() + 10)?.1, "b")
        XCTAssertEqual(eight.wait(until: .now() + 10)?.7, 8)
    }

    func testAllFilledKeepsOrder() {
        let deferreds = (0 ..< 20).map { _ in Deferred<Int>() }
        let all = deferreds.allFilled()
        for (index, deferred) in deferreds.enumerated().reversed() {
            deferred.fill(with: index)
        }
        XCTAssertEqual(all.wait(until: .now() + 10), Array(0 ..< 20))
        XCTAssertEqual([Future<Int>]().allFilled().peek(), [])
    }

    func testFirstFilled() {
        let deferreds = (0 ..< 3).map { _ in Deferred<Int>() }
        let first = deferreds.firstFilled()
        deferreds[1].fill(with: 1)
        deferreds[0].fill(with: 0)
        XCTAssertEqual(first.wait(until: .now() + 10), 1)
    }

    func testAsyncRunsOnTheQueueWithFlags() {
        let future = Future<Int>.async(upon: .global(), flags: [.barrier]) { 6 * 7 }
        XCTAssertEqual(future.wait(until: .now() + 10), 42)
        XCTAssertEqual(Future<Int>.async { 1 }.wait(until: .now() + 10), 1)
    }

    func testACustomFutureTypeGetsTheAlgorithms() {
        struct Constant: FutureProtocol {
            let value: Int
            func upon(_ executor: Executor, execute body: @escaping (Int) -> Void) {
                let value = self.value
                executor.submit { body(value) }
            }
            func peek() -> Int? { value }
        }
        let constant = Constant(value: 5)
        XCTAssertEqual(constant.map(upon: .any()) { $0 + 1 }.wait(until: .now() + 10), 6)
        XCTAssertTrue(constant.isFilled)
        XCTAssertEqual(constant.wait(until: .now()), 5)
    }
}

final class CustomFutureTests: XCTestCase {
    func testATypeThatImplementsWaitGetsPeek() {
        // Written as Deferred 4 users wrote conforming types: upon and wait.
        struct Stored: FutureProtocol {
            let deferred = Deferred<Int>()
            func upon(_ executor: Executor, execute body: @escaping (Int) -> Void) {
                deferred.upon(executor, execute: body)
            }
            func wait(until time: DispatchTime) -> Int? {
                deferred.wait(until: time)
            }
        }
        let stored = Stored()
        XCTAssertNil(stored.peek())
        stored.deferred.fill(with: 3)
        XCTAssertEqual(stored.peek(), 3)
        XCTAssertEqual(stored.map(upon: .any()) { $0 * 2 }.wait(until: .now() + 10), 6)
    }
}
