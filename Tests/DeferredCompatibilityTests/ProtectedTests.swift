import Deferred
import Dispatch
import Foundation
import XCTest

/// A lock of a user's own, written as Deferred users write one: only `withReadLock`.
final class UserLock: Locking {
    private let lock = NSLock()

    func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

final class ProtectedTests: XCTestCase {
    private func checkCountsEveryIncrement(with lock: Locking, file: StaticString = #filePath, line: UInt = #line) {
        let protected = Protected(initialValue: 0, lock: lock)
        DispatchQueue.concurrentPerform(iterations: 200) { _ in
            protected.withWriteLock { $0 += 1 }
        }
        XCTAssertEqual(protected.withReadLock { $0 }, 200, file: file, line: line)
    }

    func testEveryLockGuardsTheValue() {
        checkCountsEveryIncrement(with: NativeLock())
        checkCountsEveryIncrement(with: POSIXReadWriteLock())
        checkCountsEveryIncrement(with: DispatchSemaphore(value: 1))
        checkCountsEveryIncrement(with: NSLock())
        checkCountsEveryIncrement(with: NSRecursiveLock())
        checkCountsEveryIncrement(with: UserLock())
    }

    func testAttemptedReadWhileWriting() {
        let protected = Protected(initialValue: 1, lock: NSLock())
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            protected.withWriteLock { _ in
                inside.signal()
                release.wait()
            }
        }
        inside.wait()
        XCTAssertNil(protected.withAttemptedReadLock { $0 })
        XCTAssertEqual(String(reflecting: protected), "Protected(locked)")
        XCTAssertEqual(Mirror(reflecting: protected).children.first?.label, "isLocked")
        release.signal()
        XCTAssertEqual(protected.withReadLock { $0 }, 1)
        XCTAssertEqual(Mirror(reflecting: protected).children.first?.value as? Int, 1)
    }

    func testRecursiveLockMayBeTakenAgain() {
        let lock = NSRecursiveLock()
        let value = lock.withReadLock { lock.withWriteLock { 3 } }
        XCTAssertEqual(value, 3)
    }

    func testLocksDirectly() {
        let lock = NativeLock()
        XCTAssertEqual(lock.withReadLock { 1 }, 1)
        XCTAssertEqual(lock.withAttemptedReadLock { 2 }, 2)
        XCTAssertEqual(DispatchSemaphore(value: 1).withAttemptedReadLock { 3 }, 3)
        XCTAssertNil(DispatchSemaphore(value: 0).withAttemptedReadLock { 4 })
    }
}
