import Flow

/// Runs future-producing work only once calls have stopped coming for a quiet period: the work of the
/// latest call runs, and every call made while waiting gets its result.
///
/// For a search field that queries a server as the user types, a save that follows a burst of edits, a
/// refresh triggered by a flurry of notifications.
///
/// ```swift
/// let search = Debouncer<[Match]>(on: .main, interval: 0.3)
///
/// func queryChanged(_ query: String) {
///     search { api.search(query) }.onValue { matches in show(matches) }
/// }
/// ```
///
/// Each call restarts the quiet period on `scheduler`'s timers. A caller that cancels its future stops
/// waiting; when every waiting caller has cancelled, the pending work is dropped. Work already started is
/// not cancelled by later calls.
public final class Debouncer<Value: Sendable>: Sendable {
    private typealias Completion = @Sendable (Result<Value>) -> Void

    private struct State {
        /// Bumped by every call: only the timer armed by the latest call may run the work.
        var generation: UInt64 = 0
        var pendingWork: (@Sendable () -> Future<Value>)?
        var timer: Disposable?
        var waiters: [UInt64: Completion] = [:]
        var nextWaiter: UInt64 = 0
    }

    // Guarded by the mutex; timers are disposed, work started and callers completed after it is released.
    private let state = Locked(State())
    let scheduler: Scheduler
    let interval: Double

    /// Creates a debouncer whose quiet period is `interval` seconds on `scheduler`'s clock.
    ///
    /// ```swift
    /// let save = Debouncer<Void>(interval: 2)
    /// ```
    public init(on scheduler: Scheduler = .current, interval: Double) {
        misusePrecondition(interval.isFinite && interval >= 0, "Debouncer: the interval must be zero or more seconds, not \(interval)")
        self.scheduler = scheduler
        self.interval = interval
    }

    /// Asks for `work` to run once no other call has come for the quiet period. `work` replaces the work of
    /// earlier calls still waiting; it runs on the debouncer's scheduler.
    ///
    /// ```swift
    /// save { store.write(document) }
    /// ```
    ///
    /// - Returns: a future of the result of the work that finally runs (this call's, or a later one's).
    @preconcurrency
    @discardableResult
    public func callAsFunction(_ work: @escaping @Sendable () -> Future<Value>) -> Future<Value> {
        Future(on: scheduler) { [self] completion in
            let (waiter, generation, replacedTimer) = state.withLock { state in
                state.generation += 1
                state.nextWaiter += 1
                state.pendingWork = work
                state.waiters[state.nextWaiter] = completion
                let replaced = state.timer
                state.timer = nil
                return (state.nextWaiter, state.generation, replaced)
            }
            replacedTimer?.dispose()
            let timer = scheduler.timer(after: interval) { [self] in runPendingWork(generation: generation) }
            let isCurrent = state.withLock { state -> Bool in
                guard state.generation == generation, state.pendingWork != nil else { return false }
                state.timer = timer
                return true
            }
            if !isCurrent { timer.dispose() }
            return Disposer { [self] in stopWaiting(waiter) }
        }
    }

    private func runPendingWork(generation: UInt64) {
        let taken = state.withLock { state -> (work: @Sendable () -> Future<Value>, waiters: [Completion])? in
            guard state.generation == generation, let work = state.pendingWork else { return nil }
            let waiters = state.waiters.sorted { $0.key < $1.key }.map(\.value)
            state.pendingWork = nil
            state.waiters = [:]
            state.timer = nil
            return (work, waiters)
        }
        guard let taken else { return }
        taken.work().onResult(on: scheduler) { result in
            for waiter in taken.waiters { waiter(result) }
        }
    }

    /// A caller's future completed or was cancelled: it no longer waits, and work nobody waits for is dropped.
    private func stopWaiting(_ waiter: UInt64) {
        let droppedTimer = state.withLock { state -> Disposable? in
            guard state.waiters.removeValue(forKey: waiter) != nil, state.waiters.isEmpty else { return nil }
            state.pendingWork = nil
            let timer = state.timer
            state.timer = nil
            return timer
        }
        droppedTimer?.dispose()
    }
}
