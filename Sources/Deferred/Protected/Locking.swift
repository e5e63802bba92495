#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Synchronization

/// A lock that runs closures with exclusive (write) or shared (read) access.
///
/// A lock with a single mode implements ``withReadLock(_:)`` only: writing and attempting default
/// to it, as in Deferred. `NativeLock`, `POSIXReadWriteLock`, `DispatchSemaphore`, `NSLock` and
/// `NSRecursiveLock` conform.
///
/// ```swift
/// let lock: any Locking = NativeLock()
/// lock.withWriteLock { cache.removeAll() }
/// ```
public protocol Locking {
    /// Runs `body` while holding the lock for reading: other readers may hold it too, a writer not.
    func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return

    /// Runs `body` if the lock can be taken for reading at once; returns `nil` without running it
    /// otherwise.
    func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return?

    /// Runs `body` while holding the lock exclusively.
    func withWriteLock<Return>(_ body: () throws -> Return) rethrows -> Return
}

extension Locking {
    /// Runs `body` while holding the lock exclusively: a lock with a single mode treats writing as
    /// reading.
    public func withWriteLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        try withReadLock(body)
    }

    /// Runs `body` while holding the lock for reading, waiting for it if need be: a lock that cannot
    /// try without waiting always takes it.
    public func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return? {
        try withReadLock(body)
    }
}

/// The platform's plain mutual-exclusion lock: one holder at a time, readers included.
///
/// The fastest choice when reads are short or not much more frequent than writes.
public final class NativeLock: Locking, Sendable {
    private let mutex = Synchronization.Mutex<Void>(())

    /// Creates an unlocked lock.
    public init() {}

    /// Runs `body` while holding the lock.
    public func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        try mutex.withLock { _ in try body() }
    }

    /// Runs `body` while holding the lock.
    public func withWriteLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        try mutex.withLock { _ in try body() }
    }

    /// Runs `body` if the lock is free; returns `nil` without running it otherwise.
    public func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return? {
        try mutex.withLockIfAvailable { _ in try body() }
    }
}

/// A POSIX readers-writer lock: any number of readers at once, or one writer.
///
/// Worth it when reads are long and frequent compared with writes.
public final class POSIXReadWriteLock: Locking, @unchecked Sendable {
    // @unchecked Sendable: the only state is the `pthread_rwlock_t`, which synchronises itself; the
    // pointer to it never changes.
    private let rwlock: UnsafeMutablePointer<pthread_rwlock_t>

    /// Creates an unlocked lock.
    public init() {
        rwlock = .allocate(capacity: 1)
        let status = pthread_rwlock_init(rwlock, nil)
        precondition(status == 0, "POSIXReadWriteLock: pthread_rwlock_init failed with \(status)")
    }

    deinit {
        pthread_rwlock_destroy(rwlock)
        rwlock.deallocate()
    }

    /// Runs `body` while holding the lock for reading, alongside other readers.
    public func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        pthread_rwlock_rdlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    /// Runs `body` if the lock can be taken for reading at once; returns `nil` without running it
    /// otherwise.
    public func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return? {
        guard pthread_rwlock_tryrdlock(rwlock) == 0 else {
            return nil
        }
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    /// Runs `body` while holding the lock exclusively.
    public func withWriteLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        pthread_rwlock_wrlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }
}

extension DispatchSemaphore: Locking {
    /// Runs `body` between a wait on the semaphore and a signal: with a semaphore made with a value
    /// of 1, one caller at a time.
    public func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        _ = wait(timeout: .distantFuture)
        defer { signal() }
        return try body()
    }

    /// Runs `body` if the semaphore can be taken at once; returns `nil` without running it otherwise.
    public func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return? {
        guard wait(timeout: .now()) == .success else {
            return nil
        }
        defer { signal() }
        return try body()
    }
}

extension NSLock: Locking, AttemptableLock {
    /// Runs `body` while holding the lock.
    public func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        try withLockHeld(body)
    }

    /// Runs `body` if the lock is free; returns `nil` without running it otherwise.
    public func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return? {
        try withLockIfFree(body)
    }
}

extension NSRecursiveLock: Locking, AttemptableLock {
    /// Runs `body` while holding the lock, which the same thread may take again inside `body`.
    public func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        try withLockHeld(body)
    }

    /// Runs `body` if the lock is free or held by this thread; returns `nil` without running it
    /// otherwise.
    public func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return? {
        try withLockIfFree(body)
    }
}

/// Foundation's locks that can also be tried (`NSLock`, `NSRecursiveLock`), though no Foundation
/// protocol declares `try()`: their ``Locking`` conformances share these bodies.
private protocol AttemptableLock: NSLocking {
    func `try`() -> Bool
}

extension AttemptableLock {
    func withLockHeld<Return>(_ body: () throws -> Return) rethrows -> Return {
        lock()
        defer { unlock() }
        return try body()
    }

    func withLockIfFree<Return>(_ body: () throws -> Return) rethrows -> Return? {
        guard `try`() else {
            return nil
        }
        defer { unlock() }
        return try body()
    }
}
