import Dispatch
import Flow
import Synchronization

extension Task {
    /// Runs `work` on `queue` and gives its outcome as a task: its return value, or the error it
    /// threw. Cancelling the task before `work` starts keeps it from starting and fails the task
    /// with the error `makeError` makes; once `work` runs, cancelling has no effect.
    ///
    /// ```swift
    /// let parsed = Task<Document>.async(upon: .any(), onCancel: CocoaError(.userCancelled)) {
    ///     try Document(parsing: data)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: where `work` runs; a concurrent background queue by default.
    ///   - flags: how `work` runs, as `DispatchQueue.async(flags:execute:)` takes them.
    ///   - makeError: the failure of a task cancelled before `work` started.
    ///   - work: computes the value, or throws.
    @preconcurrency
    public static func async(
        upon queue: DispatchQueue = .any(),
        flags: DispatchWorkItemFlags = [],
        onCancel makeError: @autoclosure @escaping @Sendable () -> any Error,
        execute work: @escaping @Sendable () throws -> Success
    ) -> Task<Success> {
        let promise = Promise()
        // Whoever claims the start first decides: the work runs, or the cancellation fails the task;
        // the other finds it claimed and does nothing.
        let started = Atomic<Bool>(false)
        queue.asyncDelivering(flags: flags) {
            guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
            promise.fill(with: Result(catching: work))
        }
        return Task(Future(promise), uponCancel: {
            guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
            promise.fail(with: makeError())
        })
    }

    /// Runs `work` on `executor` and gives its outcome as a task: its return value, or the error it
    /// threw.
    ///
    /// ```swift
    /// let parsed: Task<Document> = .async(upon: loop) { try Document(parsing: data) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `work` runs.
    ///   - cancellation: run by ``cancel()``, once, unless the work has finished.
    ///   - work: the work.
    @preconcurrency
    public static func async(
        upon executor: any Executor,
        uponCancel cancellation: (@Sendable () -> Void)? = nil,
        execute work: @escaping @Sendable () throws -> Success
    ) -> Task<Success> {
        let promise = Promise()
        executor.submit { promise.fill(with: Result { try work() }) }
        return Task(promise, uponCancel: cancellation)
    }

    /// Runs `work` on `queue` (a concurrent background queue by default) and gives its outcome as a
    /// task: its return value, or the error it threw.
    ///
    /// ```swift
    /// let parsed: Task<Document> = .async { try Document(parsing: data) }
    /// ```
    @preconcurrency
    public static func async(
        upon queue: DispatchQueue = .any(),
        uponCancel cancellation: (@Sendable () -> Void)? = nil,
        execute work: @escaping @Sendable () throws -> Success
    ) -> Task<Success> {
        async(upon: queue as any Executor, uponCancel: cancellation, execute: work)
    }
}
