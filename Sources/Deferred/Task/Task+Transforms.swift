import Dispatch

extension Task {
    /// Calls `body` with the value if the task succeeds; does nothing if it fails.
    ///
    /// ```swift
    /// fetchFriends(for: jimbob).uponSuccess(on: .main) { friends in show(friends) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `body` runs; by default the scheduler the caller executes on, or else a
    ///     background queue.
    ///   - body: the work to do with the value.
    public func uponSuccess(
        on executor: any Executor = defaultExecutor(),
        execute body: @escaping @Sendable (Success) -> Void
    ) {
        upon(executor) { result in
            if case .success(let value) = result {
                body(value)
            }
        }
    }

    /// Calls `body` with the value on `queue` if the task succeeds.
    public func uponSuccess(on queue: DispatchQueue, execute body: @escaping @Sendable (Success) -> Void) {
        uponSuccess(on: queue as any Executor, execute: body)
    }

    /// Calls `body` with the error if the task fails; does nothing if it succeeds.
    ///
    /// - Parameters:
    ///   - executor: where `body` runs; by default the scheduler the caller executes on, or else a
    ///     background queue.
    ///   - body: the work to do with the error.
    public func uponFailure(
        on executor: any Executor = defaultExecutor(),
        execute body: @escaping @Sendable (any Error) -> Void
    ) {
        upon(executor) { result in
            if case .failure(let error) = result {
                body(error)
            }
        }
    }

    /// Calls `body` with the error on `queue` if the task fails.
    public func uponFailure(on queue: DispatchQueue, execute body: @escaping @Sendable (any Error) -> Void) {
        uponFailure(on: queue as any Executor, execute: body)
    }

    /// A task of `transform` applied to this task's value; a failure, or an error `transform` throws,
    /// becomes the new task's failure. Cancelling the new task cancels this one.
    ///
    /// ```swift
    /// let names: Task<[String]> = fetchFriends(for: jimbob).map { $0.map(\.name) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `transform` runs; by default the scheduler the caller executes on, or
    ///     else a background queue.
    ///   - transform: makes the new value from this task's value.
    public func map<NewSuccess>(
        upon executor: any Executor = defaultExecutor(),
        transform: @escaping @Sendable (Success) throws -> NewSuccess
    ) -> Task<NewSuccess> {
        let mapped = future.map(upon: executor) { result in
            result.flatMap { value in Task<NewSuccess>.Result { try transform(value) } }
        }
        return Task<NewSuccess>(mapped, uponCancel: cancellation.cancel)
    }

    /// A task of `transform` applied to this task's value, with `transform` running on `queue`.
    public func map<NewSuccess>(
        upon queue: DispatchQueue,
        transform: @escaping @Sendable (Success) throws -> NewSuccess
    ) -> Task<NewSuccess> {
        map(upon: queue as any Executor, transform: transform)
    }

    /// Starts the next task with this task's value, and finishes as that task does; a failure, or an
    /// error `start` throws, skips it. Cancelling the new task cancels whichever of the two runs.
    ///
    /// ```swift
    /// let avatar: Task<Image> = fetchUser(id).andThen { user in downloadImage(at: user.avatarURL) }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `start` runs; by default the scheduler the caller executes on, or else a
    ///     background queue.
    ///   - start: begins the next task.
    public func andThen<NewSuccess>(
        upon executor: any Executor = defaultExecutor(),
        start: @escaping @Sendable (Success) throws -> Task<NewSuccess>
    ) -> Task<NewSuccess> {
        let chain = TaskCancellation(cancellation.cancel)
        let outcome = Deferred<Task<NewSuccess>.Result>()
        upon(executor) { result in
            do {
                let next = try start(result.get())
                chain.started(next)
                uponInline(next) { outcome.fill(with: $0) }
            } catch {
                outcome.fill(with: .failure(error))
            }
        }
        return Task<NewSuccess>(outcome, uponCancel: chain.cancel)
    }

    /// Starts the next task with this task's value, running `start` on `queue`.
    public func andThen<NewSuccess>(
        upon queue: DispatchQueue,
        start: @escaping @Sendable (Success) throws -> Task<NewSuccess>
    ) -> Task<NewSuccess> {
        andThen(upon: queue as any Executor, start: start)
    }

    /// A task that replaces this task's failure with the value `substitution` makes from the error;
    /// an error `substitution` throws is the new failure. Cancelling the new task cancels this one.
    ///
    /// ```swift
    /// let friends: Task<[Friend]> = fetchFriends(for: jimbob).recover { _ in cachedFriends }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `substitution` runs; by default the scheduler the caller executes on, or
    ///     else a background queue.
    ///   - substitution: makes a value from the error.
    public func recover(
        upon executor: any Executor = defaultExecutor(),
        substituting substitution: @escaping @Sendable (any Error) throws -> Success
    ) -> Task<Success> {
        let recovered = future.map(upon: executor) { result in
            result.flatMapError { error in Result { try substitution(error) } }
        }
        return Task(recovered, uponCancel: cancellation.cancel)
    }

    /// A task that replaces this task's failure with a value, running `substitution` on `queue`.
    public func recover(
        upon queue: DispatchQueue,
        substituting substitution: @escaping @Sendable (any Error) throws -> Success
    ) -> Task<Success> {
        recover(upon: queue as any Executor, substituting: substitution)
    }

    /// A task that, if this one fails, starts another with the error and finishes as that one does.
    /// Cancelling the new task cancels whichever of the two runs.
    ///
    /// ```swift
    /// let friends: Task<[Friend]> = fetchFriends(for: jimbob).fallback { _ in loadCachedFriends() }
    /// ```
    ///
    /// - Parameters:
    ///   - executor: where `restart` runs; by default the scheduler the caller executes on, or else
    ///     a background queue.
    ///   - restart: begins the replacement task; an error it throws is the new failure.
    public func fallback(
        upon executor: any Executor = defaultExecutor(),
        to restart: @escaping @Sendable (any Error) throws -> Task<Success>
    ) -> Task<Success> {
        let chain = TaskCancellation(cancellation.cancel)
        let outcome = Deferred<Result>()
        upon(executor) { result in
            guard case .failure(let error) = result else {
                outcome.fill(with: result)
                return
            }
            do {
                let replacement = try restart(error)
                chain.started(replacement)
                uponInline(replacement) { outcome.fill(with: $0) }
            } catch {
                outcome.fill(with: .failure(error))
            }
        }
        return Task(outcome, uponCancel: chain.cancel)
    }

    /// A task that, if this one fails, starts another with the error, running `restart` on `queue`.
    public func fallback(
        upon queue: DispatchQueue,
        to restart: @escaping @Sendable (any Error) throws -> Task<Success>
    ) -> Task<Success> {
        fallback(upon: queue as any Executor, to: restart)
    }

    /// Starts a task, and starts it again each time it fails, up to `count` more times, while
    /// `shouldRetry` agrees. Finishes with the first success or the last failure.
    ///
    /// ```swift
    /// let friends = Task.repeat(count: 2, continuingIf: { $0 is NetworkError }) {
    ///     fetchFriends(for: jimbob)
    /// }
    /// ```
    ///
    /// Cancelling the task cancels the attempt that runs and starts no more.
    ///
    /// - Parameters:
    ///   - executor: where `startTask` and `shouldRetry` run; by default the scheduler the caller
    ///     executes on, or else a background queue.
    ///   - numberOfRetries: how many times to start again after the first attempt; the task runs at
    ///     most `numberOfRetries + 1` times. Negative counts as zero.
    ///   - shouldRetry: whether a failure with this error is worth another attempt.
    ///   - startTask: starts an attempt; an error it throws counts as that attempt's failure.
    public static func `repeat`(
        upon executor: any Executor = defaultExecutor(),
        count numberOfRetries: Int = 3,
        continuingIf shouldRetry: @escaping @Sendable (any Error) -> Bool = { _ in true },
        to startTask: @escaping @Sendable () throws -> Task<Success>
    ) -> Task<Success> {
        let outcome = Deferred<Result>()
        let chain = TaskCancellation()
        let attempts = RepeatedAttempts(
            executor: ExecutorReference(executor), outcome: outcome, chain: chain,
            shouldRetry: shouldRetry, startTask: startTask)
        executor.submit { attempts.start(retriesLeft: max(0, numberOfRetries)) }
        return Task(outcome, uponCancel: chain.cancel)
    }
}

/// The attempts of ``Task/repeat(upon:count:continuingIf:to:)``.
private struct RepeatedAttempts<Success: Sendable>: Sendable {
    let executor: ExecutorReference
    let outcome: Deferred<Task<Success>.Result>
    let chain: TaskCancellation
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
