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
    /// Tasks in ``waitUntilNoneAlive(timeout:)``, resumed when the count reaches zero.
    private let waiters = Locked<[CheckedContinuation<Void, Never>]>([])

    /// Creates a counter at zero.
    public init() {}

    /// How many futures counted by this counter are alive.
    public var value: Int { count.load(ordering: .acquiring) }

    /// Waits until no future counted by this counter is alive, or until `timeout` has passed: for a
    /// test whose futures were completed on other threads, which may let go of them just after the
    /// test saw their results.
    ///
    /// ```swift
    /// #expect(await count.waitUntilNoneAlive(timeout: .seconds(10)))
    /// ```
    ///
    /// - Returns: whether the count reached zero in time.
    public func waitUntilNoneAlive(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            wakeWaiters()
        }
        defer { timer.cancel() }
        while value != 0 {
            if ContinuousClock.now >= deadline { return false }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Checked again under the lock that `wakeWaiters` takes after the count reached zero,
                // so that reaching zero now is never missed.
                let isWaiting = waiters.withLock { waiting -> Bool in
                    guard value != 0 else { return false }
                    waiting.append(continuation)
                    return true
                }
                if !isWaiting { continuation.resume() }
            }
        }
        return true
    }

    private func wakeWaiters() {
        let woken = waiters.withLock { waiting -> [CheckedContinuation<Void, Never>] in
            defer { waiting = [] }
            return waiting
        }
        for continuation in woken { continuation.resume() }
    }

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
    func decrement() {
        if count.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { wakeWaiters() }
    }
}
