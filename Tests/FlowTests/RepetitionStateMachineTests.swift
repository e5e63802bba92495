import Testing

@testable import Flow

/// The bookkeeping of `onErrorRepeat` / `onResultRepeat`, driven directly: attempts, decisions and
/// delays are plain values here, and each event's action is checked without futures or threads.
@Suite("Repetition state machine")
struct RepetitionStateMachineTests {
    typealias Machine = RepetitionStateMachine<String, Int, String>

    private func makeMachine(maxRepetitions: Int? = nil, betweenYields: Int = 16) -> Machine {
        Machine(firstAttempt: "first", maxRepetitions: maxRepetitions, immediateRepetitionsBetweenYields: betweenYields)
    }

    @Test("asks the policy until maxRepetitions re-runs were decided, then completes")
    func completesAfterTheMaximum() {
        var machine = makeMachine(maxRepetitions: 2)
        #expect(machine.attemptDidComplete(isCompleted: false) == .askPolicy)
        #expect(machine.repetitionDecided() == 1)
        #expect(machine.attemptDidComplete(isCompleted: false) == .askPolicy)
        #expect(machine.repetitionDecided() == 2)
        #expect(machine.attemptDidComplete(isCompleted: false) == .complete)
        #expect(machine.repetitions == 2)
    }

    @Test("maxRepetitions 0 completes with the first result")
    func zeroRepetitionsCompletesAtOnce() {
        let machine = makeMachine(maxRepetitions: 0)
        #expect(machine.attemptDidComplete(isCompleted: false) == .complete)
    }

    @Test("a completed (cancelled) future asks nothing and stores nothing more")
    func completedFutureStoresNothing() {
        var machine = makeMachine()
        #expect(machine.attemptDidComplete(isCompleted: true) == .complete)
        #expect(machine.decisionIsPending(7, isCompleted: true) == false)
        #expect(machine.delayStarted("delay", isCompleted: true) == false)
        #expect(machine.attemptStarting("second", isCompleted: true) == false)
        #expect(machine.attempt == "first")
        let pending = machine.cancel()
        #expect(pending.delay == nil && pending.decision == nil)
    }

    @Test("a cancellation hands over the pending decision and delay once")
    func cancelHandsOverWhatIsPending() {
        var machine = makeMachine()
        #expect(machine.decisionIsPending(7, isCompleted: false) == true)
        #expect(machine.delayStarted("delay", isCompleted: false) == true)
        let pending = machine.cancel()
        #expect(pending.decision == 7)
        #expect(pending.delay == "delay")
        let again = machine.cancel()
        #expect(again.decision == nil && again.delay == nil)
    }

    @Test("an arrived decision is no longer pending, and matters only while the future is not completed")
    func arrivedDecisionIsNotPending() {
        var machine = makeMachine()
        #expect(machine.decisionIsPending(7, isCompleted: false) == true)
        #expect(machine.decisionArrived(isCompleted: false) == true)
        #expect(machine.cancel().decision == nil)
        #expect(machine.decisionIsPending(8, isCompleted: false) == true)
        #expect(machine.decisionArrived(isCompleted: true) == false)
    }

    @Test("a started attempt replaces the one cancellation reaches and ends the delay before it")
    func startedAttemptReplacesTheAttempt() {
        var machine = makeMachine()
        #expect(machine.delayStarted("delay", isCompleted: false) == true)
        #expect(machine.attemptStarting("second", isCompleted: false) == true)
        #expect(machine.attempt == "second")
        #expect(machine.cancel().delay == nil)
    }

    @Test("a delay already over, or failed, leaves nothing to cancel")
    func delayOverLeavesNothing() {
        var machine = makeMachine()
        #expect(machine.delayStarted(nil, isCompleted: false) == true)
        #expect(machine.cancel().delay == nil)
        #expect(machine.delayStarted("delay", isCompleted: false) == true)
        machine.delayFailed()
        #expect(machine.cancel().delay == nil)
    }

    @Test("every (n+1)th re-run in a row without a delay goes through the queue; a delay restarts the count")
    func immediateRunsYieldPeriodically() {
        var machine = makeMachine(betweenYields: 3)
        var starts: [Machine.StartAction] = []
        for _ in 0..<8 { starts.append(machine.startRepetition(isDelayed: false)) }
        #expect(starts == [.now, .now, .now, .afterYielding, .now, .now, .now, .afterYielding])
        #expect(machine.startRepetition(isDelayed: false) == .now)
        #expect(machine.startRepetition(isDelayed: true) == .afterDelay)
        #expect(machine.startRepetition(isDelayed: false) == .now)
        #expect(machine.startRepetition(isDelayed: false) == .now)
        #expect(machine.startRepetition(isDelayed: false) == .now)
        #expect(machine.startRepetition(isDelayed: false) == .afterYielding)
    }
}
