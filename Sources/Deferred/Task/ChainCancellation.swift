import Synchronization

/// Cancellation for a task made of steps that start one after another (``Task/andThen(upon:start:)``,
/// ``Task/fallback(upon:to:)``, ``Task/repeat(upon:count:continuingIf:to:)``): cancelling it cancels
/// the step running now, and any step started afterwards at once.
final class ChainCancellation: Sendable {
    private struct State {
        var isCancelled = false
        var cancelCurrentStep: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>

    init(cancellingFirstStep cancelFirstStep: (@Sendable () -> Void)? = nil) {
        state = Mutex(State(cancelCurrentStep: cancelFirstStep))
    }

    var isCancelled: Bool {
        state.withLock { $0.isCancelled }
    }

    /// Cancels the current step, and marks the chain so that later steps are cancelled as they start.
    func cancel() {
        let cancelCurrentStep = state.withLock { state in
            state.isCancelled = true
            let cancelCurrentStep = state.cancelCurrentStep
            state.cancelCurrentStep = nil
            return cancelCurrentStep
        }
        cancelCurrentStep?()
    }

    /// Records the step that runs now; cancels it at once if the chain was cancelled.
    func started<StepSuccess>(_ step: Task<StepSuccess>) {
        let isCancelled = state.withLock { state in
            if !state.isCancelled {
                state.cancelCurrentStep = { step.cancel() }
            }
            return state.isCancelled
        }
        if isCancelled {
            step.cancel()
        }
    }
}
