import Synchronization

extension Collection {
    /// A task that succeeds once all these tasks succeeded, or fails with the first failure.
    /// Cancelling it cancels them all. An empty collection gives a task that has succeeded.
    ///
    /// ```swift
    /// let uploads: [Task<Receipt>] = photos.map { upload($0) }
    /// uploads.allSucceeded().uponSuccess(on: .main) { showDone() }
    /// ```
    public func allSucceeded<Success>() -> Task<Void> where Element == Task<Success> {
        let tasks = Array(self)
        guard !tasks.isEmpty else {
            return Task(success: ())
        }
        let outcome = Deferred<Task<Void>.Result>()
        let remaining = Atomic<Int>(tasks.count)
        for task in tasks {
            uponInline(task) { result in
                switch result {
                case .success:
                    if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                        outcome.succeed()
                    }
                case .failure(let error):
                    outcome.fail(with: error)
                }
            }
        }
        return Task(outcome, uponCancel: { tasks.forEach { $0.cancel() } })
    }
}

extension Task {
    /// A task that succeeds with both values once this task and `other` succeeded, or fails with the
    /// first failure. Cancelling it cancels both.
    ///
    /// ```swift
    /// let profile: Task<(User, [Friend])> = fetchUser(id).andSuccess(of: fetchFriends(for: id))
    /// ```
    public func andSuccess<Other>(of other: Task<Other>) -> Task<(Success, Other)> {
        let outcome = Deferred<Task<(Success, Other)>.Result>()
        let failFirst: @Sendable (any Error) -> Void = { outcome.fail(with: $0) }
        uponInline(self) { if case .failure(let error) = $0 { failFirst(error) } }
        uponInline(other) { if case .failure(let error) = $0 { failFirst(error) } }
        uponInline(self.and(other)) { results in
            if case .success(let value) = results.0, case .success(let otherValue) = results.1 {
                outcome.succeed(with: (value, otherValue))
            }
        }
        return Task<(Success, Other)>(outcome, uponCancel: { [self] in
            cancel()
            other.cancel()
        })
    }

    /// A task that succeeds with all three values once this task, `other` and `third` succeeded, or
    /// fails with the first failure. Cancelling it cancels them all.
    public func andSuccess<Other, Third>(
        of other: Task<Other>, _ third: Task<Third>
    ) -> Task<(Success, Other, Third)> {
        andSuccess(of: other).andSuccess(of: third).map(upon: InlineExecutor.shared) { values in
            (values.0.0, values.0.1, values.1)
        }
    }

    /// A task that succeeds with all four values once this task and the three others succeeded, or
    /// fails with the first failure. Cancelling it cancels them all.
    public func andSuccess<Other, Third, Fourth>(
        of other: Task<Other>, _ third: Task<Third>, _ fourth: Task<Fourth>
    ) -> Task<(Success, Other, Third, Fourth)> {
        andSuccess(of: other, third).andSuccess(of: fourth).map(upon: InlineExecutor.shared) { values in
            (values.0.0, values.0.1, values.0.2, values.1)
        }
    }
}
