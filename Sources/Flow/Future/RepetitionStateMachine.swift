/// The bookkeeping of a repeating future (`onErrorRepeat`, `onResultRepeat`), without threads,
/// locks or futures: the attempt running, how many re-runs were made, and what is pending between two
/// attempts (the policy's decision, the delay), so that a cancellation reaches it.
///
/// Every event returns what the caller must do (complete, ask the policy, start the next attempt
/// now, after a delay or from the scheduler's queue); the future performs it after releasing its
/// lock, so the policy's closures never run under it. The events that store something take
/// `isCompleted`, the future's completion flag read under the same lock: once the future completed
/// (by cancellation too) nothing more is stored, and the caller cancels what it meant to store.
///
/// Invariant: `repetitions <= maxRepetitions` when there is a maximum.
struct RepetitionStateMachine<Attempt, Decision, Delay> {
    /// What to do with an attempt's result.
    enum ResultAction: Equatable, Sendable {
        /// Complete the future with it: the future already completed, or no re-run is left.
        case complete
        /// Ask the policy whether to run again.
        case askPolicy
    }

    /// How a decided re-run starts.
    enum StartAction: Equatable, Sendable {
        /// After the policy's delay.
        case afterDelay
        /// At once, from this call.
        case now
        /// From the scheduler's queue: enough re-runs started at once in a row.
        case afterYielding
    }

    /// Re-runs allowed after the first execution; nil: no limit.
    let maxRepetitions: Int?
    /// How many re-runs without a delay start at once in a row before the next goes through the
    /// scheduler's queue.
    let immediateRepetitionsBetweenYields: Int

    /// The execution running or last run.
    private(set) var attempt: Attempt
    /// Re-runs decided so far.
    private(set) var repetitions = 0
    /// Re-runs started at once since the repetition last went through the scheduler's queue or a delay.
    private var repetitionsSinceYield = 0
    /// The policy's decision being waited for.
    private var pendingDecision: Decision?
    /// The delay being waited out before the next attempt.
    private var pendingDelay: Delay?

    init(firstAttempt: Attempt, maxRepetitions: Int?, immediateRepetitionsBetweenYields: Int) {
        precondition(
            maxRepetitions.map { $0 >= 0 } ?? true,
            "RepetitionStateMachine: maxRepetitions must be 0 or more, not \(maxRepetitions ?? 0)")
        attempt = firstAttempt
        self.maxRepetitions = maxRepetitions
        self.immediateRepetitionsBetweenYields = immediateRepetitionsBetweenYields
    }

    /// The attempt completed.
    func attemptDidComplete(isCompleted: Bool) -> ResultAction {
        guard !isCompleted, maxRepetitions.map({ repetitions < $0 }) ?? true else { return .complete }
        return .askPolicy
    }

    /// The policy's decision is pending: it is kept for cancellation.
    ///
    /// - Returns: whether it was kept; `false` when the future completed, and the caller drops it.
    mutating func decisionIsPending(_ decision: Decision, isCompleted: Bool) -> Bool {
        guard !isCompleted else { return false }
        pendingDecision = decision
        return true
    }

    /// The policy decided.
    ///
    /// - Returns: whether the decision still matters (the future has not completed).
    mutating func decisionArrived(isCompleted: Bool) -> Bool {
        pendingDecision = nil
        return !isCompleted
    }

    /// The policy said to run again.
    ///
    /// - Returns: the re-run's number, counted from 1, for its delay and the retry report.
    mutating func repetitionDecided() -> Int {
        precondition(
            maxRepetitions.map { repetitions < $0 } ?? true,
            "RepetitionStateMachine: a re-run was decided beyond maxRepetitions")
        repetitions += 1
        return repetitions
    }

    /// How the re-run just decided starts, given whether the policy wants a delay before it.
    mutating func startRepetition(isDelayed: Bool) -> StartAction {
        if isDelayed {
            repetitionsSinceYield = 0
            return .afterDelay
        }
        repetitionsSinceYield += 1
        guard repetitionsSinceYield > immediateRepetitionsBetweenYields else { return .now }
        repetitionsSinceYield = 0
        return .afterYielding
    }

    /// The delay before the next attempt started; `delay` is nil when it already ended.
    ///
    /// - Returns: whether the repetition goes on; `false` when the future completed, and the caller
    ///   cancels the delay.
    mutating func delayStarted(_ delay: Delay?, isCompleted: Bool) -> Bool {
        guard !isCompleted else { return false }
        if let delay { pendingDelay = delay }
        return true
    }

    /// The delay failed (its timer was dropped uncalled): nothing is pending any more.
    mutating func delayFailed() {
        pendingDelay = nil
    }

    /// A fresh run of the operation is about to start.
    ///
    /// - Returns: whether to start it; `false` when the future completed, and the caller cancels it.
    mutating func attemptStarting(_ fresh: Attempt, isCompleted: Bool) -> Bool {
        guard !isCompleted else { return false }
        attempt = fresh
        pendingDelay = nil
        return true
    }

    /// The future was cancelled.
    ///
    /// - Returns: what was pending, for the caller to cancel.
    mutating func cancel() -> (delay: Delay?, decision: Decision?) {
        defer {
            pendingDelay = nil
            pendingDecision = nil
        }
        return (pendingDelay, pendingDecision)
    }
}
