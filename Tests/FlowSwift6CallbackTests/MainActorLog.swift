import Flow
import FlowTimers
import Testing

/// Main-actor state of the kind Swift 6 code keeps (not `Sendable`, reachable only from the main
/// actor), written by the callbacks under test: each entry records that a callback ran, and whether it
/// ran on the main loop.
@MainActor
final class MainActorLog {
    private(set) var entries: [String] = []
    private(set) var everyEntryWasOnTheMainLoop = true
    private var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    func append(_ entry: String) {
        entries.append(entry)
        everyEntryWasOnTheMainLoop = everyEntryWasOnTheMainLoop && Scheduler.main.isExecuting
        let ready = waiters.filter { entries.count >= $0.count }
        waiters.removeAll { entries.count >= $0.count }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Returns once the log holds `count` entries; records an issue and returns after the hang guard's
    /// time if it never does, so that a callback that never runs fails the test rather than hanging it.
    func waitForEntries(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        guard entries.count < count else { return }
        let guardTimer = MainActorScheduler.mainActor.timer(after: 30) {
            guard !self.waiters.isEmpty else { return }
            Issue.record(
                "only \(self.entries.count) of \(count) callbacks ran: \(self.entries)", sourceLocation: sourceLocation)
            let waiting = self.waiters
            self.waiters.removeAll()
            for waiter in waiting { waiter.continuation.resume() }
        }
        await withCheckedContinuation { continuation in waiters.append((count, continuation)) }
        guardTimer.dispose()
    }
}
