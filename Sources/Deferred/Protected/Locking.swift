#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A lock that runs closures with exclusive (write) or shared (read) access.
///
/// ```swift
/// let lock: any Locking = NativeLock()
/// lock.withWriteLock { cache.removeAll() }
/// ```
public protocol Locking: Sendable {
    /// Runs `body` while holding the lock for reading: other readers may hold it too, a writer not.
    func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return

    /// Runs `body` if the lock can be taken for reading at once; returns `nil` without running it
    /// otherwise.
    func withAttemptedReadLock<Return>(_ body: () throws -> Return) rethrows -> Return?

    /// Runs `body` while holding the lock exclusively.
    func withWriteLock<Return>(_ body: () throws -> Return) rethrows -> Return
}

extension Locking {
    /// Runs `body` while holding the lock exclusively: a lock with a single mode treats reading as
    /// writing.
    public func withReadLock<Return>(_ body: () throws -> Return) rethrows -> Return {
        try withWriteLock(body)
    }
}

/// The platform's plain mutual-exclusion lock: one holder at a time, readers included.
///
/// The fastest choice when reads are short or not much more frequent than writes.
public final class NativeLock: Locking {
    private let mutex = Synchronization.Mutex<Void>(())

    /// Creates an unlocked lock.
    public init() {}

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
