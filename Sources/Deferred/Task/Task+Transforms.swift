import Dispatch

extension TaskProtocol {
    /// Calls `body` with the value if the task succeeds; does nothing if it fails.
    ///
    /// ```swift
    /// fetchFriends(for: jimbob).uponSuccess(on: .main) { friends in show(friends) }
    /// ```
    ///
    /// - Parameters:
    ///   - queue: where `body` runs; by default a concurrent background queue
    ///     (``FutureProtocol/defaultUponExecutor``), wherever the caller runs.
    ///   - body: the work to do with the value.
    @preconcurrency
    public func uponSuccess(
        on queue: PreferredExecutor = Self.defaultUponExecutor,
        execute body: @escaping @Sendable (Success) -> Void
    ) {
        uponSuccess(on: queue as any Executor, execute: body)
    }

    /// Calls `body` with the value on `executor` if the task succeeds.
    @preconcurrency
    public func uponSuccess(on executor: any Executor, execute body: @escaping @Sendable (Success) -> Void) {
        upon(executor) { result in
            if case .success(let value) = result.taskResult {
                body(value)
            }
        }
    }

    /// Calls `body` with the error if the task fails; does nothing if it succeeds.
    ///
    /// - Parameters:
    ///   - queue: where `body` runs; by default a concurrent background queue
    ///     (``FutureProtocol/defaultUponExecutor``), wherever the caller runs.
    ///   - body: the work to do with the error.
    @preconcurrency
    public func uponFailure(
        on queue: PreferredExecutor = Self.defaultUponExecutor,
        execute body: @escaping @Sendable (any Error) -> Void
    ) {
        uponFailure(on: queue as any Executor, execute: body)
    }

    /// Calls `body` with the error on `executor` if the task fails.
    @preconcurrency
    public func uponFailure(on executor: any Executor, execute body: @escaping @Sendable (any Error) -> Void) {
        upon(executor) { result in
            if case .failure(let error) = result.taskResult {
                body(error)
            }
        }
    }

    /// A task of `transform` applied to this task's value; a failure, or an error `transform` throws,
    /// becomes the new task's failure. Cancelling the new task cancels this one.
    ///
    /// ```swift
    /// let names: Task<[String]> = fetchFriends(for: jimbob).map(upon: .any()) { $0.map(\.name) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `transform` runs; by default a concurrent background queue.
    ///   - transform: makes the new value from this task's value.
    @preconcurrency
    public func map<NewSuccess: Sendable>(
        upon executor: any Executor = defaultExecutor(),
        transform: @escaping @Sendable (Success) throws -> NewSuccess
    ) -> Task<NewSuccess> {
        let mapped = Task<NewSuccess>.Promise()
        upon(executor) { result in
            mapped.fill(with: result.taskResult.flatMap { value in Task<NewSuccess>.Result { try transform(value) } })
        }
        return Task<NewSuccess>(Future(mapped), uponCancel: { self.cancel() })
    }

    /// A task of `transform` applied to this task's value, with `transform` running on `queue`.
    @preconcurrency
    public func map<NewSuccess: Sendable>(
        upon queue: PreferredExecutor,
        transform: @escaping @Sendable (Success) throws -> NewSuccess
    ) -> Task<NewSuccess> {
        map(upon: queue as any Executor, transform: transform)
    }

    /// A view of this task whose value is `transform` applied to this one's, recomputed every time it
    /// is read, wherever it is read: for cheap projections such as unwrapping. Cancelling it cancels
    /// this task.
    ///
    /// ```swift
    /// let count: Task<Int> = fetchFriends(for: jimbob).everySuccess { $0.count }
    /// ```
    @preconcurrency
    public func everySuccess<NewSuccess: Sendable>(
        per transform: @escaping @Sendable (Success) -> NewSuccess
    ) -> Task<NewSuccess> {
        let projected = every { $0.taskResult.map(transform) }
        return Task<NewSuccess>(projected, uponCancel: { self.cancel() })
    }

    /// A task that finishes when this one does, with its failure or with no value: for those who care
    /// whether, not what. Cancelling it cancels this task.
    ///
    /// ```swift
    /// let saved: Task<Void> = save(document).ignored()
    /// ```
    public func ignored() -> Task<Void> {
        everySuccess { _ in () }
    }

    /// Starts the next task with this task's value, and finishes as that task does; a failure, or an
    /// error `start` throws, skips it. The next task's outcome is delivered through `executor` too.
    /// Cancelling the new task cancels whichever of the two runs.
    ///
    /// ```swift
    /// let avatar: Task<Image> = fetchUser(id).andThen(upon: .any()) { user in
    ///     downloadImage(at: user.avatarURL)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `start` runs and the next task's outcome arrives; by default a concurrent
    ///     background queue.
    ///   - start: begins the next task.
    @preconcurrency
    public func andThen<NewTask: TaskProtocol>(
        upon executor: any Executor = defaultExecutor(),
        start: @escaping @Sendable (Success) throws -> NewTask
    ) -> Task<NewTask.Success> {
        let chain = TaskCancellation({ self.cancel() })
        let outcome = Task<NewTask.Success>.Promise()
        let reference = ExecutorReference(executor)
        // Through a StepChainReference: this task may never finish, and the chain's handler holds it;
        // a cancel made before this runs still reaches the next task.
        let steps = chain.referenceForSteps
        upon(executor) { result in
            do {
                let next = try start(result.taskResult.get())
                steps.started(next)
                next.upon(reference.executor) { outcome.fill(with: $0.taskResult) }
            } catch {
                outcome.fill(with: .failure(error))
            }
        }
        return Task<NewTask.Success>(Future(outcome), uponCancel: chain.cancel)
    }

    /// Starts the next task with this task's value, running `start` on `queue`.
    @preconcurrency
    public func andThen<NewTask: TaskProtocol>(
        upon queue: PreferredExecutor,
        start: @escaping @Sendable (Success) throws -> NewTask
    ) -> Task<NewTask.Success> {
        andThen(upon: queue as any Executor, start: start)
    }

    /// A task that replaces this task's failure with the value `substitution` makes from the error;
    /// an error `substitution` throws is the new failure. Cancelling the new task cancels this one.
    ///
    /// ```swift
    /// let friends: Task<[Friend]> = fetchFriends(for: jimbob).recover(upon: .any()) { _ in cachedFriends }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `substitution` runs; by default a concurrent background queue.
    ///   - substitution: makes a value from the error.
    @preconcurrency
    public func recover(
        upon executor: any Executor = defaultExecutor(),
        substituting substitution: @escaping @Sendable (any Error) throws -> Success
    ) -> Task<Success> {
        let recovered = Task<Success>.Promise()
        upon(executor) { result in
            recovered.fill(with: result.taskResult.flatMapError { error in Result { try substitution(error) } })
        }
        return Task(Future(recovered), uponCancel: { self.cancel() })
    }

    /// A task that replaces this task's failure with a value, running `substitution` on `queue`.
    @preconcurrency
    public func recover(
        upon queue: PreferredExecutor,
        substituting substitution: @escaping @Sendable (any Error) throws -> Success
    ) -> Task<Success> {
        recover(upon: queue as any Executor, substituting: substitution)
    }

    /// A task that, if this one fails, starts another with the error and finishes as that one does.
    /// Cancelling the new task cancels whichever of the two runs.
    ///
    /// ```swift
    /// let friends: Task<[Friend]> = fetchFriends(for: jimbob).fallback(upon: .any()) { _ in
    ///     loadCachedFriends()
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `restart` runs and the replacement's outcome arrives; by default a
    ///     concurrent background queue.
    ///   - restart: begins the replacement task; an error it throws is the new failure.
    @preconcurrency
    public func fallback<NewTask: TaskProtocol>(
        upon executor: any Executor = defaultExecutor(),
        to restart: @escaping @Sendable (any Error) throws -> NewTask
    ) -> Task<Success> where NewTask.Success == Success {
        let chain = TaskCancellation({ self.cancel() })
        let outcome = Task<Success>.Promise()
        let reference = ExecutorReference(executor)
        // As in andThen: this task may never finish, and a cancel made before this runs still
        // reaches the replacement.
        let steps = chain.referenceForSteps
        upon(executor) { result in
            guard case .failure(let error) = result.taskResult else {
                outcome.fill(with: result.taskResult)
                return
            }
            do {
                let replacement = try restart(error)
                steps.started(replacement)
                replacement.upon(reference.executor) { outcome.fill(with: $0.taskResult) }
            } catch {
                outcome.fill(with: .failure(error))
            }
        }
        return Task(Future(outcome), uponCancel: chain.cancel)
    }

    /// A task that, if this one fails, starts another with the error, running `restart` on `queue`.
    @preconcurrency
    public func fallback<NewTask: TaskProtocol>(
        upon queue: PreferredExecutor,
        to restart: @escaping @Sendable (any Error) throws -> NewTask
    ) -> Task<Success> where NewTask.Success == Success {
        fallback(upon: queue as any Executor, to: restart)
    }
}

extension Task {
    /// Starts a task, and starts it again each time it fails, up to `count` more times, while
    /// `shouldRetry` agrees. Finishes with the first success or the last failure.
    ///
    /// ```swift
    /// let friends = Task.repeat(count: 2, continuingIf: { $0 is NetworkError }) {
    ///     fetchFriends(for: jimbob)
    /// }
    /// ```
    ///
    /// The first attempt starts on `queue`, after this returns (Deferred started it in the caller).
    /// Cancelling the task cancels the attempt that runs and starts no more; a cancel that comes
    /// before the first attempt has started does not keep `startTask` from running, but that attempt
    /// is cancelled as soon as it has started, and none follows it.
    ///
    /// - Parameters:
    ///   - queue: where `startTask` and `shouldRetry` run; by default a concurrent background queue.
    ///   - numberOfRetries: how many times to start again after the first attempt; the task runs at
    ///     most `numberOfRetries + 1` times. Negative counts as zero.
    ///   - shouldRetry: whether a failure with this error is worth another attempt.
    ///   - startTask: starts an attempt; an error it throws counts as that attempt's failure.
    @preconcurrency
    public static func `repeat`(
        upon queue: PreferredExecutor = .any(),
        count numberOfRetries: Int = 3,
        continuingIf shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
        to startTask: @escaping @Sendable () throws -> Task<Success>
    ) -> Task<Success> {
        `repeat`(upon: queue as any Executor, count: numberOfRetries, continuingIf: shouldRetry, to: startTask)
    }

    /// Starts a task, and starts it again each time it fails, as ``repeat(upon:count:continuingIf:to:)``
    /// does, with `startTask` and `shouldRetry` running on `executor`.
    @preconcurrency
    public static func `repeat`(
        upon executor: any Executor,
        count numberOfRetries: Int = 3,
        continuingIf shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
        to startTask: @escaping @Sendable () throws -> Task<Success>
    ) -> Task<Success> {
        let outcome = Deferred<Result>()
        let chain = TaskCancellation()
        let attempts = RepeatedAttempts(
            executor: ExecutorReference(executor), outcome: outcome, chain: chain.referenceForSteps,
            shouldRetry: shouldRetry, startTask: startTask)
        executor.submit { attempts.start(retriesLeft: max(0, numberOfRetries)) }
        return Task(Future(outcome), uponCancel: chain.cancel)
    }
}

/// The attempts of ``Task/repeat(upon:count:continuingIf:to:)``.
private struct RepeatedAttempts<Success: Sendable>: Sendable {
    let executor: ExecutorReference
    let outcome: Deferred<Task<Success>.Result>
    /// Not the chain itself: an attempt that never finishes holds these attempts, and the chain holds
    /// the attempt.
    let chain: StepChainReference
    let shouldRetry: @Sendable (any Error) -> Bool
    let startTask: @Sendable () throws -> Task<Success>

    /// Starts an attempt; on its failure, starts the next one on the executor.
    func start(retriesLeft: Int) {
        let attempt: Task<Success>
        do {
            attempt = try startTask()
        } catch {
            attempt = Task(failure: error)
        }
        chain.started(attempt)
        attempt.upon(executor.executor) { result in
            if case .failure(let error) = result, retriesLeft > 0, !chain.isCancelled, shouldRetry(error) {
                start(retriesLeft: retriesLeft - 1)
            } else {
                outcome.fill(with: result)
            }
        }
    }
}
