import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-word lock for a future's state: a compare-and-swap to take it when free, and a short spin
/// then yielding when not.
///
/// Every critical section it guards is a handful of loads and stores and never calls user code, so
/// waiting is short; `Synchronization.Mutex` would do too, but its `sending` rules do not fit state
/// holding a generic, possibly non-`Sendable` value.
@usableFromInline
package struct FutureLock: ~Copyable, @unchecked Sendable {
    // @unchecked Sendable: the only stored property is an atomic word.
    @usableFromInline
    let word = Atomic<UInt32>(0)

    @inlinable
    package init() {}

    @inlinable
    package func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }

    @inlinable
    package func lock() {
        if word.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
        lockContended()
    }

    @usableFromInline
    func lockContended() {
        var backoff = LockBackoff()
        while true {
            if word.load(ordering: .relaxed) == 0,
               word.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged {
                return
            }
            backoff.pause()
        }
    }

    @inlinable
    package func unlock() {
        word.store(0, ordering: .releasing)
    }
}

/// How a waiter for a lock whose critical sections are a handful of loads and stores waits between
/// attempts: a short spin, then yielding the processor. Shared by ``FutureLock`` and the lock in a
/// future's state word.
@usableFromInline
struct LockBackoff {
    @usableFromInline var spins = 0

    @usableFromInline
    init() {}

    /// Waits before the next attempt.
    @usableFromInline
    mutating func pause() {
        spins += 1
        if spins >= 64 { sched_yield() }
    }
}
