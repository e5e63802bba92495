import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A one-word lock stored inside the object it guards: a compare-and-swap to take it when free, and a
/// short spin then yielding when not (``LockBackoff``).
///
/// For the objects whose size per instance and whose delivery path are benchmark goals, where a
/// ``Locked`` box would be a second allocation and a call into the C library: a signal's callbacker,
/// listener, handle and event gate, and a `Deferred`. State anywhere else lives in a ``Locked``.
/// Every critical section it guards is a handful of loads and stores and never calls user code, so
/// waiting is short. ThreadSanitizer sees it: its atomics are compiled into this package.
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
        LockBackoff.acquire {
            word.load(ordering: .relaxed) == 0
                && word.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged
        }
    }

    @inlinable
    package func unlock() {
        word.store(0, ordering: .releasing)
    }
}

/// The one wait loop of the package's own locks (``FutureLock`` and the lock bit in a future's state
/// word), whose critical sections are a handful of loads and stores: a short spin, then yielding the
/// processor between attempts.
@usableFromInline
enum LockBackoff {
    /// Attempts before the waiter starts yielding the processor between attempts.
    static var spinsBeforeYielding: Int { 64 }

    /// Calls `tryAcquire` until it returns `true`.
    @usableFromInline
    static func acquire(_ tryAcquire: () -> Bool) {
        var attempts = 0
        while !tryAcquire() {
            attempts += 1
            if attempts >= spinsBeforeYielding { sched_yield() }
        }
    }
}
