#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value and the lock that guards it, in one object: the package's box for state shared across
/// threads, so that a type holding one is `Sendable` because the compiler sees that its state is.
///
/// The lock is a POSIX mutex, which ThreadSanitizer sees (it does not see inside the prebuilt
/// `Synchronization.Mutex` on Linux, whose futex calls it reports as races). The mutex and the state
/// share one allocation (a `ManagedBuffer`), so the mutex never moves. Copies of a `Locked` share
/// the one box. Every critical section is short and never calls user code.
///
/// ```swift
/// let state = Locked(Submissions())
/// let isFirst = state.withLock { $0.jobs.append(job); return $0.jobs.count == 1 }
/// ```
@usableFromInline
package struct Locked<State: ~Copyable> {
    @usableFromInline
    let storage: LockedStorage<State>

    /// A box holding `initialState`, unlocked.
    @inlinable
    package init(_ initialState: consuming State) {
        storage = LockedStorage.make(initialState)
    }

    /// Runs `body` with the state, under the lock, and returns what it returns.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(storage.mutex)
        defer { pthread_mutex_unlock(storage.mutex) }
        return try body(&storage.state.pointee)
    }

    /// Takes the lock, for code that must move a non-copyable value into the state, which a closure
    /// passed to ``withLock(_:)`` cannot do: read and write ``lockedState``, then ``unlock()``.
    @inlinable
    package func lock() {
        pthread_mutex_lock(storage.mutex)
    }

    /// Releases the lock ``lock()`` took.
    @inlinable
    package func unlock() {
        pthread_mutex_unlock(storage.mutex)
    }

    /// The state, for use between ``lock()`` and ``unlock()`` only.
    @inlinable
    package var lockedState: State {
        unsafeAddress { UnsafePointer(storage.state) }
        nonmutating unsafeMutableAddress { storage.state }
    }
}

// @unchecked Sendable: the state is read and written only with the box's mutex held (`withLock`,
// or between `lock()` and `unlock()`), and only a Sendable state is handed between threads.
// `ManagedBuffer` is never Sendable, so the compiler cannot check this.
extension Locked: @unchecked Sendable where State: Sendable & ~Copyable {}

/// The allocation behind a ``Locked``: the mutex as the header, the state as the one element.
@usableFromInline
package final class LockedStorage<State: ~Copyable>: ManagedBuffer<pthread_mutex_t, State> {
    @usableFromInline
    static func make(_ initialState: consuming State) -> LockedStorage {
        let buffer = create(minimumCapacity: 1) { _ in pthread_mutex_t() }
        let storage = unsafeDowncast(buffer, to: LockedStorage.self)
        let status = pthread_mutex_init(storage.mutex, nil)
        precondition(status == 0, "Locked: pthread_mutex_init failed with error \(status)")
        storage.state.initialize(to: initialState)
        return storage
    }

    /// The mutex's address: stable, since a `ManagedBuffer`'s header never moves.
    @inlinable
    var mutex: UnsafeMutablePointer<pthread_mutex_t> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    /// The state's address: stable, since a `ManagedBuffer`'s elements never move.
    @inlinable
    var state: UnsafeMutablePointer<State> {
        withUnsafeMutablePointerToElements { $0 }
    }

    deinit {
        state.deinitialize(count: 1)
        pthread_mutex_destroy(mutex)
    }
}
