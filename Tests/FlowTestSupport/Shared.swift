import Flow

/// A value shared between a test and the work it schedules, guarded by a lock ThreadSanitizer sees
/// (Flow's `Locked`: `Synchronization.Mutex` locks where ThreadSanitizer cannot see it).
public final class Shared<Value: Sendable>: Sendable {
    private let storage: Locked<Value>

    /// A shared `value`.
    public init(_ value: Value) { storage = Locked(value) }

    /// The value now; setting it replaces it under the lock.
    public var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    /// Replaces the value.
    public func set(_ newValue: Value) { storage.withLock { $0 = newValue } }

    /// Runs `body` on the value under the lock and returns what it returns.
    @discardableResult
    public func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// State a test keeps between the callbacks of its loop.
public final class LoopState<Value>: @unchecked Sendable {
    // @unchecked Sendable: only touched on the test's loop, whose callbacks all run on the thread
    // inside `runLoop`.
    /// The state.
    public var value: Value

    /// State starting at `value`.
    public init(_ value: Value) { self.value = value }
}
