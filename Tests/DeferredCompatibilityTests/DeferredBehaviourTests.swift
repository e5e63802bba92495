import Deferred
import Dispatch
import Foundation
import Task
import XCTest

/// What Deferred 4.x documents and its own tests check, written as those tests write it.
final class DeferredReflectionTests: XCTestCase {
    func testReflectionOfAnUnfilledDeferred() {
        let magicMirror = Mirror(reflecting: Deferred<Int>())
        XCTAssertEqual(magicMirror.displayStyle, .optional)
        XCTAssertNil(magicMirror.superclassMirror)
        XCTAssertEqual(magicMirror.descendant("isFilled") as? Bool, false)
    }

    func testReflectionOfAFilledDeferred() {
        let magicMirror = Mirror(reflecting: Deferred<Int>(filledWith: 42))
        XCTAssertEqual(magicMirror.displayStyle, .optional)
        XCTAssertNil(magicMirror.superclassMirror)
        XCTAssertEqual(magicMirror.descendant(0) as? Int, 42)
    }

    func testReflectionOfAFilledVoidDeferred() {
        let magicMirror = Mirror(reflecting: Deferred<Void>(filledWith: ()))
        XCTAssertEqual(magicMirror.displayStyle, .optional)
        XCTAssertNil(magicMirror.superclassMirror)
        XCTAssertEqual(magicMirror.descendant("isFilled") as? Bool, true)
    }

    func testReflectionOfFutures() {
        let unfilled = Mirror(reflecting: Future<Int>.never)
        XCTAssertEqual(unfilled.displayStyle, .optional)
        XCTAssertEqual(unfilled.descendant("isFilled") as? Bool, false)

        let filled = Mirror(reflecting: Future<Int>(value: 42))
        XCTAssertEqual(filled.displayStyle, .optional)
        XCTAssertEqual(filled.descendant(0) as? Int, 42)

        let void = Mirror(reflecting: Future<Void>(value: ()))
        XCTAssertEqual(void.displayStyle, .optional)
        XCTAssertEqual(void.descendant("isFilled") as? Bool, true)
    }

    func testReflectionOfAnUnfinishedTask() {
        let magicMirror = Mirror(reflecting: Task<Int>.never)
        XCTAssertEqual(magicMirror.displayStyle, .optional)
        XCTAssertEqual(magicMirror.descendant("isFilled") as? Bool, false)
    }
}

final class ChainedTaskCancellationTests: XCTestCase {
    /// Holds what it is given until the test runs it, as a busy queue would.
    private final class HeldExecutor: Executor {
        private let lock = NSLock()
        private var held = [() -> Void]()

        func submit(_ body: @escaping () -> Void) {
            lock.lock()
            held.append(body)
            lock.unlock()
        }

        func runAll() {
            while true {
                lock.lock()
                let next = held.isEmpty ? nil : held.removeFirst()
                lock.unlock()
                guard let next = next else { return }
                next()
            }
        }
    }

    func testThatAndThenForwardsCancellationToSubsequentTask() {
        let executor = HeldExecutor()
        let expectation = self.expectation(description: "the next task is cancelled")
        let task: Task<String> = Task(success: 42).andThen(upon: executor) { _ in
            Task(Future.never) {
                expectation.fulfill()
            }
        }

        task.cancel()
        executor.runAll()

        wait(for: [expectation], timeout: 10)
    }

    func testThatFallbackForwardsCancellationToTheReplacement() {
        let executor = HeldExecutor()
        let expectation = self.expectation(description: "the replacement is cancelled")
        let task: Task<String> = Task(failure: CocoaError(.featureUnsupported)).fallback(upon: executor) { _ in
            Task(Future.never) {
                expectation.fulfill()
            }
        }

        task.cancel()
        executor.runAll()

        wait(for: [expectation], timeout: 10)
    }
}

/// Deferred 4.x's `Protected` tests, run with each lock it offers: its suite ran them in subclasses,
/// one per lock, which XCTest on Linux does not run (it finds only the methods a class declares), so
/// only `NativeLock` was ever checked there. Each test here goes through every lock.
final class ProtectedWithEachLockTests: XCTestCase {
    private let locks: [(name: String, make: () -> Locking)] = [
        ("NativeLock", { NativeLock() }),
        ("DispatchSemaphore", { DispatchSemaphore(value: 1) }),
        ("POSIXReadWriteLock", { POSIXReadWriteLock() }),
        ("NSLock", { NSLock() }),
    ]

    func testReadersSeeAWriteWholeOrNotAtAll() {
        for (name, makeLock) in locks {
            let protected = Protected(initialValue: [Int](), lock: makeLock())
            let queue = DispatchQueue(label: "ProtectedWithEachLockTests", attributes: .concurrent)
            let group = DispatchGroup()
            let torn = Protected(initialValue: 0)
            func startReaders() {
                for _ in 0 ..< 32 {
                    queue.async(group: group) {
                        protected.withReadLock { items in
                            if !items.isEmpty && items != [0, 1, 2, 3, 4] {
                                torn.withWriteLock { $0 += 1 }
                            }
                        }
                    }
                }
            }
            startReaders()
            queue.async(group: group) {
                protected.withWriteLock { items in
                    for item in 0 ..< 5 {
                        items.append(item)
                        sched_yield()
                    }
                }
            }
            startReaders()
            XCTAssertEqual(group.wait(timeout: .now() + 10), .success, name)
            XCTAssertEqual(torn.withReadLock { $0 }, 0, name)
            XCTAssertEqual(protected.withReadLock { $0 }, [0, 1, 2, 3, 4], name)
        }
    }

    func testDebugDescription() {
        for (name, makeLock) in locks {
            let protected = Protected<Int>(initialValue: 42, lock: makeLock())
            XCTAssertEqual("\(protected)", "Protected(42)", name)
        }
    }

    func testDebugDescriptionWhenLocked() {
        for (name, makeLock) in locks {
            let lock = makeLock()
            let protected = Protected<Int>(initialValue: 42, lock: lock)

            lock.withWriteLock {
                XCTAssertEqual("\(protected)", "Protected(locked)", name)
            }
        }
    }

    func testReflection() {
        for (name, makeLock) in locks {
            let protected = Protected<Int>(initialValue: 42, lock: makeLock())

            let magicMirror = Mirror(reflecting: protected)
            XCTAssertEqual(magicMirror.displayStyle, .optional, name)
            XCTAssertNil(magicMirror.superclassMirror, name)
            XCTAssertEqual(magicMirror.descendant(0) as? Int, 42, name)
        }
    }

    func testReflectionWhenLocked() {
        for (name, makeLock) in locks {
            let lock = makeLock()
            let protected = Protected<Int>(initialValue: 42, lock: lock)

            lock.withWriteLock {
                let magicMirror = Mirror(reflecting: protected)
                XCTAssertEqual(magicMirror.displayStyle, .optional, name)
                XCTAssertNil(magicMirror.superclassMirror, name)
                XCTAssertEqual(magicMirror.descendant("isLocked") as? Bool, true, name)
            }
        }
    }

    func testAWriterWaitsForTheReaderInside() {
        for (name, makeLock) in locks {
            let protected = Protected(initialValue: 0, lock: makeLock())
            let readerInside = DispatchSemaphore(value: 0)
            let readerMayLeave = DispatchSemaphore(value: 0)
            let writerDone = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                protected.withReadLock { _ in
                    readerInside.signal()
                    readerMayLeave.wait()
                }
            }
            readerInside.wait()
            DispatchQueue.global().async {
                protected.withWriteLock { $0 = 1 }
                writerDone.signal()
            }
            // The writer cannot get in while the reader holds the lock.
            XCTAssertEqual(writerDone.wait(timeout: .now() + .milliseconds(50)), .timedOut, name)
            readerMayLeave.signal()
            XCTAssertEqual(writerDone.wait(timeout: .now() + 10), .success, name)
            XCTAssertEqual(protected.withReadLock { $0 }, 1, name)
        }
    }
}
