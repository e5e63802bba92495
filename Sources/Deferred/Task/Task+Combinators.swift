import Flow

extension Collection where Element: TaskProtocol {
    /// A task that succeeds with the values of all these tasks, in their order, once all succeeded,
    /// or fails with the first failure. Cancelling it cancels them all. An empty collection gives a
    /// task that has succeeded with `[]`.
    ///
    /// ```swift
    /// let uploads: [Task<Receipt>] = photos.map { upload($0) }
    /// uploads.allSucceeded().uponSuccess(on: .main) { receipts in showDone(receipts) }
    /// ```
    public func allSucceeded() -> Task<[Element.Success]> {
        let tasks = Array(self)
        guard !tasks.isEmpty else {
            return Task(success: [])
        }
        let outcome = Task<[Element.Success]>.Promise()
        let collected = Locked(CollectedValues<Element.Success>(count: tasks.count))
        for (index, task) in tasks.enumerated() {
            uponInline(task) { result in
                switch result.taskResult {
                case .success(let value):
                    if let values = collected.withLock({ $0.record(value, at: index) }) {
                        outcome.succeed(with: values)
                    }
                case .failure(let error):
                    outcome.fail(with: error)
                }
            }
        }
        return Task(Future(outcome), uponCancel: { tasks.forEach { $0.cancel() } })
    }
}

extension Collection where Element: TaskProtocol, Element.Success == Void {
    /// A task that succeeds once all these tasks succeeded, or fails with the first failure.
    /// Cancelling it cancels them all. An empty collection gives a task that has succeeded.
    ///
    /// ```swift
    /// saves.allSucceeded().uponSuccess(on: .main) { showSaved() }
    /// ```
    public func allSucceeded() -> Task<Void> {
        let all: Task<[Void]> = allSucceeded()
        return all.ignored()
    }
}

/// The first task's value and the rest's, untyped, for ``TaskProtocol/andSuccess(of:)`` and its
/// longer forms.
private func allSuccesses(of tasks: [any TaskProtocol]) -> Task<[any Sendable]> {
    tasks.map { task in task.untypedSuccess() }.allSucceeded()
}

/// The values ``allSuccesses(of:)`` gave, in their tasks' order, as a tuple of `types`. The casts
/// cannot fail: each value comes from the task of that position and type.
private func successes<each Value>(
    _ values: [any Sendable], as types: repeat (each Value).Type
) -> (repeat each Value) {
    var position = 0
    func next<Element>(_: Element.Type) -> Element {
        defer { position += 1 }
        return values[position] as! Element
    }
    return (repeat next(each types))
}

extension TaskProtocol {
    /// This task, with its value as `any Sendable`.
    fileprivate func untypedSuccess() -> Task<any Sendable> {
        everySuccess { $0 as any Sendable }
    }
}

extension TaskProtocol {

    /// A task that succeeds with both values once this task and `a` succeeded, or fails with the
    /// first failure. Cancelling it cancels both.
    ///
    /// ```swift
    /// let profile: Task<(User, [Friend])> = fetchUser(id).andSuccess(of: fetchFriends(for: id))
    /// ```
    public func andSuccess<A: TaskProtocol>(
        of a: A
    ) -> Task<(Success, A.Success)> {
        allSuccesses(of: [self, a]).everySuccess { values in
            successes(values, as: Success.self, A.Success.self)
        }
    }

    /// A task that succeeds with all 3 values once this task and the 2 others succeeded, or fails
    /// with the first failure. Cancelling it cancels them all.
    public func andSuccess<A: TaskProtocol, B: TaskProtocol>(
        of a: A, _ b: B
    ) -> Task<(Success, A.Success, B.Success)> {
        allSuccesses(of: [self, a, b]).everySuccess { values in
            successes(values, as: Success.self, A.Success.self, B.Success.self)
        }
    }

    /// A task that succeeds with all 4 values once this task and the 3 others succeeded, or fails
    /// with the first failure. Cancelling it cancels them all.
    public func andSuccess<A: TaskProtocol, B: TaskProtocol, C: TaskProtocol>(
        of a: A, _ b: B, _ c: C
    ) -> Task<(Success, A.Success, B.Success, C.Success)> {
        allSuccesses(of: [self, a, b, c]).everySuccess { values in
            successes(values, as: Success.self, A.Success.self, B.Success.self, C.Success.self)
        }
    }

    /// A task that succeeds with all 5 values once this task and the 4 others succeeded, or fails
    /// with the first failure. Cancelling it cancels them all.
    public func andSuccess<A: TaskProtocol, B: TaskProtocol, C: TaskProtocol, D: TaskProtocol>(
        of a: A, _ b: B, _ c: C, _ d: D
    ) -> Task<(Success, A.Success, B.Success, C.Success, D.Success)> {
        allSuccesses(of: [self, a, b, c, d]).everySuccess { values in
            successes(values, as: Success.self, A.Success.self, B.Success.self, C.Success.self, D.Success.self)
        }
    }

    /// A task that succeeds with all 6 values once this task and the 5 others succeeded, or fails
    /// with the first failure. Cancelling it cancels them all.
    public func andSuccess<A: TaskProtocol, B: TaskProtocol, C: TaskProtocol, D: TaskProtocol, E: TaskProtocol>(
        of a: A, _ b: B, _ c: C, _ d: D, _ e: E
    ) -> Task<(Success, A.Success, B.Success, C.Success, D.Success, E.Success)> {
        allSuccesses(of: [self, a, b, c, d, e]).everySuccess { values in
            successes(
                values, as: Success.self, A.Success.self, B.Success.self,
                C.Success.self, D.Success.self, E.Success.self)
        }
    }

    /// A task that succeeds with all 7 values once this task and the 6 others succeeded, or fails
    /// with the first failure. Cancelling it cancels them all.
    public func andSuccess<
        A: TaskProtocol, B: TaskProtocol, C: TaskProtocol, D: TaskProtocol, E: TaskProtocol, F: TaskProtocol
    >(
        of a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F
    ) -> Task<(Success, A.Success, B.Success, C.Success, D.Success, E.Success, F.Success)> {
        allSuccesses(of: [self, a, b, c, d, e, f]).everySuccess { values in
            successes(
                values, as: Success.self, A.Success.self, B.Success.self, C.Success.self,
                D.Success.self, E.Success.self, F.Success.self)
        }
    }

    /// A task that succeeds with all 8 values once this task and the 7 others succeeded, or fails
    /// with the first failure. Cancelling it cancels them all.
    public func andSuccess<
        A: TaskProtocol, B: TaskProtocol, C: TaskProtocol, D: TaskProtocol,
        E: TaskProtocol, F: TaskProtocol, G: TaskProtocol
    >(
        of a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G
    ) -> Task<(Success, A.Success, B.Success, C.Success, D.Success, E.Success, F.Success, G.Success)> {
        allSuccesses(of: [self, a, b, c, d, e, f, g]).everySuccess { values in
            successes(
                values, as: Success.self, A.Success.self, B.Success.self, C.Success.self,
                D.Success.self, E.Success.self, F.Success.self, G.Success.self)
        }
    }
}
