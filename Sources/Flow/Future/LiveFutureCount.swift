import Synchronization

/// Counts the futures created while it is current that are still alive: a leak check for tests.
///
/// Counting happens in debug builds only; in release builds the count stays 0.
///
/// ```swift
/// let count = LiveFutureCount()
/// count.track {
///     Future(1).map { $0 + 1 }.onValue { print($0) }
/// }
/// #expect(count.value == 0)
/// ```
public final class LiveFutureCount: Sendable {
    private let count = Atomic<Int>(0)

    /// Creates a counter at zero.
    public init() {}

    /// How many futures counted by this counter are alive.
    public var value: Int { count.load(ordering: .acquiring) }

    /// Runs `body` with this counter current: the futures it creates on this task, and the futures
    /// derived from them anywhere, are counted.
    public func track<T>(_ body: () throws -> T) rethrows -> T {
        try LiveFutureCount.$current.withValue(self, operation: body)
    }

    /// Runs asynchronous `body` with this counter current.
    public func track<T>(_ body: () async throws -> T) async rethrows -> T {
        try await LiveFutureCount.$current.withValue(self, operation: body)
    }

    @usableFromInline
    @TaskLocal static var current: LiveFutureCount?

    @usableFromInline
    func increment() { count.add(1, ordering: .relaxed) }

    @usableFromInline
    func decrement() { count.subtract(1, ordering: .releasing) }
}
