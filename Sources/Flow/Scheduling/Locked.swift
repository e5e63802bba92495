/// A value guarded by a ``FutureLock``: the package's replacement for `Synchronization.Mutex` where
/// ThreadSanitizer must see the synchronisation.
///
/// On Linux `Mutex` locks with raw futex calls inside the prebuilt Synchronization library, which
/// ThreadSanitizer does not see, so every access it guards is reported as a race. ``FutureLock`` is
/// built from atomics compiled into this package, which ThreadSanitizer does see. Like the `Mutex`
/// uses it replaces, every critical section is short and never calls user code.
///
/// ```swift
/// let state = Locked(Submissions())
/// let isFirst = state.withLock { $0.jobs.append(job); return $0.jobs.count == 1 }
/// ```
@usableFromInline
package final class Locked<State: ~Copyable> {
    @usableFromInline
    let lock = FutureLock()

    /// Guarded by `lock`; read and written only inside ``withLock(_:)``.
    @usableFromInline @exclusivity(unchecked)
    var lockedState: State

    @inlinable
    package init(_ initialState: consuming State) {
        lockedState = initialState
    }

    /// Runs `body` with the state, under the lock, and returns what it returns.
    @inlinable
    package func withLock<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&lockedState)
    }
}

// @unchecked Sendable: the only mutable state, `lockedState`, is read and written only under `lock`.
extension Locked: @unchecked Sendable where State: Sendable & ~Copyable {}
