#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A lock around a POSIX mutex, as Flow code uses it: ``lock()`` and ``unlock()``, or ``protect(_:)``
/// around a critical section.
///
/// ```swift
/// let mutex = Mutex()
/// var total = 0
/// future.onValue { value in mutex.protect { total += value } }
/// ```
///
/// A file that imports both `Flow` and `Synchronization` sees two types named `Mutex`: write
/// `Flow.Mutex()` for this class and `Synchronization.Mutex(initialValue)` for the standard
/// library's value-holding lock.
///
/// Not recursive: locking it again on the thread that holds it deadlocks, as in Flow.
public final class Mutex: @unchecked Sendable {
    // @unchecked Sendable: the class is a lock; its only state is the mutex it wraps, which is
    // allocated once (a pthread mutex must not move) and used only through the pthread calls.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Creates an unlocked mutex.
    public init() {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "Flow.Mutex: pthread_mutex_init failed with error \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Takes the lock, waiting until it is free.
    public func lock() {
        pthread_mutex_lock(mutex)
    }

    /// Releases the lock, which the calling thread must hold.
    public func unlock() {
        pthread_mutex_unlock(mutex)
    }

    /// Runs `block` holding the lock and returns what it returns (or rethrows what it throws).
    ///
    /// ```swift
    /// let count = mutex.protect { counter.value }
    /// ```
    @discardableResult
    public func protect<T>(_ block: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try block()
    }
}
