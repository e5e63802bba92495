import Flow

extension FutureProtocol {
    /// Calls main-actor `body` with the value once it is known, on the main loop: as
    /// `upon(Scheduler.main)`, for code that updates main-actor state with no box and no
    /// `MainActor.assumeIsolated` (the main loop's work is main-actor work).
    ///
    /// ```swift
    /// var names: [String] = []   // main-actor state
    /// fetchName().upon(.mainActor) { name in names.append(name) }
    /// ```
    public func upon(_ mainActor: MainActorScheduler, execute body: @escaping @MainActor (Value) -> Void) {
        upon(mainActor.scheduler as any Executor, execute: mainActor.callback(body))
    }
}

extension TaskProtocol {
    /// Calls main-actor `body` with the value if the task succeeds, on the main loop: as
    /// `uponSuccess(on: Scheduler.main)`, for code that updates main-actor state.
    ///
    /// ```swift
    /// fetchFriends(for: jimbob).uponSuccess(on: .mainActor) { friends in shownFriends = friends }
    /// ```
    public func uponSuccess(on mainActor: MainActorScheduler, execute body: @escaping @MainActor (Success) -> Void) {
        uponSuccess(on: mainActor.scheduler as any Executor, execute: mainActor.callback(body))
    }

    /// Calls main-actor `body` with the error if the task fails, on the main loop: as
    /// `uponFailure(on: Scheduler.main)`, for code that updates main-actor state.
    public func uponFailure(
        on mainActor: MainActorScheduler, execute body: @escaping @MainActor (any Error) -> Void
    ) {
        uponFailure(on: mainActor.scheduler as any Executor, execute: mainActor.callback(body))
    }
}
