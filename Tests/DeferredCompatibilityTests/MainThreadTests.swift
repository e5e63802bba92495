// Deferred code that blocks the main thread, as tests and command-line tools do: the value arrives
// from elsewhere, so the wait returns, whether or not the main event loop ever ran.
import Deferred
import Dispatch
import Flow
import XCTest

final class MainThreadTests: XCTestCase {
    func testValueFilledOnABackgroundThreadReachesADefaultUponWhileTheMainThreadWaits() {
        XCTAssertTrue(Thread.isMainThread)
        let deferred = Deferred<Int>()
        let seen = Deferred<Int>()
        deferred.upon { value in seen.fill(with: value) }
        DispatchQueue.global().async { deferred.fill(with: 9) }
        XCTAssertEqual(seen.wait(until: .now() + 10), 9)
    }

    func testDefaultUponFilledOnTheMainThreadRunsOffIt() {
        let deferred = Deferred<Int>()
        var ranOnMainThread = true
        let ran = expectation(description: "upon ran")
        deferred.upon { _ in
            ranOnMainThread = Thread.isMainThread
            ran.fulfill()
        }
        deferred.fill(with: 1)
        wait(for: [ran], timeout: 10)
        XCTAssertFalse(ranOnMainThread)
    }

    func testWaitAfterTheMainLoopRanBlocksAndReturns() {
        // XCTest's wait(for:) serves the main queue, which drives the main loop.
        let loopRan = expectation(description: "the main loop ran a job")
        EventLoop.main.execute { loopRan.fulfill() }
        wait(for: [loopRan], timeout: 10)
        XCTAssertTrue(EventLoop.main.isDriven)

        let deferred = Deferred<Int>()
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { deferred.fill(with: 4) }
        XCTAssertEqual(deferred.wait(until: .now() + 10), 4)
    }

    func testWaitInWorkOnTheMainSchedulerBeforeTheLoopRunsBlocksAndReturns() {
        let deferred = Deferred<Int>()
        let seen = Deferred<Int?>()
        Scheduler.main.async {
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(20)) { deferred.fill(with: 5) }
            seen.fill(with: deferred.wait(until: .now() + 10))
        }
        // Work given to the main scheduler from the main thread runs at once, before the loop runs.
        XCTAssertEqual(seen.peek(), .some(5))
    }

    func testCancellingATaskOfAFlowFutureFailsItWithACancellationError() {
        let task = Task(Flow.Future(42).delay(by: 0.5))
        task.cancel()
        XCTAssertTrue(task.isCancelled)
        guard let result = task.wait(until: .now() + 10) else {
            return XCTFail("the cancelled task never finished")
        }
        XCTAssertThrowsError(try result.get()) { error in
            XCTAssertEqual(error as? FutureError, .aborted)
        }
    }

    func testUponTheMainLoopIsOneArgumentAway() {
        let deferred = Deferred<Int>()
        let ran = expectation(description: "upon ran on the main loop")
        var onMainLoop = false
        deferred.upon(EventLoop.main) { _ in
            onMainLoop = EventLoop.main.isInLoopContext && Thread.isMainThread
            ran.fulfill()
        }
        DispatchQueue.global().async { deferred.fill(with: 1) }
        wait(for: [ran], timeout: 10)
        XCTAssertTrue(onMainLoop)

        let viaScheduler = expectation(description: "upon ran on Scheduler.main")
        var onMainThread = false
        Deferred(filledWith: 2).upon(Scheduler.main) { _ in
            onMainThread = Thread.isMainThread
            viaScheduler.fulfill()
        }
        wait(for: [viaScheduler], timeout: 10)
        XCTAssertTrue(onMainThread)
    }
}
