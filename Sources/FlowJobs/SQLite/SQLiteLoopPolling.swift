import Flow
import Foundation
import Synchronization

/// Keeps an event loop polling without sleeping while requests it submitted to the store's writer
/// thread are in flight, for a bounded time after each one.
///
/// A request's result reaches its loop from the writer thread, and a loop asleep in its poll takes a
/// thread wake-up to see it, longer than a short transaction itself. While this loop waits for its
/// own requests, a loop timer due at once re-arms itself each turn, which keeps libuv's poll timeout
/// at zero: the loop sees the result on its next turn instead. It stops when nothing this loop
/// submitted is in flight, or when ``budgetNanoseconds`` have passed since the last submission, so
/// a loop waiting on a slow commit sleeps after that, and an idle loop never polls.
final class SQLiteLoopPolling: Sendable {
    /// How long after a submission the loop keeps polling for its result: a short commit's time, a
    /// small multiple of it, so that a commit that waits for the disk or a core lets the loop sleep.
    static let budgetNanoseconds: UInt64 = 250_000
    /// The longest yield after which the results had come that is no contention for the loop: about
    /// a short commit's time, so the yield most likely ran the writer itself (see ``SQLiteSpinPolicy``).
    static let handOverNanoseconds: UInt64 = 100_000

    let loop: EventLoop
    /// Requests from this loop at the writer, not yet settled.
    private let requestsInFlight = Atomic<Int>(0)
    /// Uptime (``EventLoop/uptimeNanoseconds``) after which the loop stops polling.
    private let pollsUntil = Atomic<UInt64>(0)
    /// Whether the polling timer is armed. Changed only on the loop's thread.
    private let isPolling = Atomic<Bool>(false)
    /// Whether the loop may poll now. Used only on the loop's thread (the lock is never contended); a
    /// `Locked`, which ThreadSanitizer sees.
    private let spinPolicy = Locked(SQLiteSpinPolicy(budgetNanoseconds: SQLiteLoopPolling.budgetNanoseconds))

    init(loop: EventLoop) {
        self.loop = loop
    }

    /// Counts a request submitted from the loop's thread, and polls until it settles. Loop's thread only.
    func requestSubmitted() {
        requestsInFlight.add(1, ordering: .relaxed)
        let now = EventLoop.uptimeNanoseconds
        pollsUntil.store(now + Self.budgetNanoseconds, ordering: .relaxed)
        guard !isPolling.load(ordering: .relaxed), spinPolicy.withLock({ $0.maySpin(at: now) }) else { return }
        isPolling.store(true, ordering: .relaxed)
        pollNextTurn()
    }

    /// Counts a request settled, after its result was handed to its listeners and the notifications of
    /// its batch to their observers. Any thread.
    func requestSettled() {
        requestsInFlight.subtract(1, ordering: .releasing)
    }

    /// Polls again on the loop's next turn. Each turn yields the core once, and stops polling when
    /// that yield shows another thread wanted it (see ``SQLiteSpinPolicy``).
    private func pollNextTurn() {
        // A timer due now fires on the loop's next turn, and libuv polls for I/O without blocking
        // before it: that poll takes the writer's result if it came.
        loop.execute(after: 0) { [self] in
            guard requestsInFlight.load(ordering: .acquiring) > 0 else { return stopPolling() }
            let before = EventLoop.uptimeNanoseconds
            sched_yield()
            let after = EventLoop.uptimeNanoseconds
            let settled = requestsInFlight.load(ordering: .acquiring) == 0
            // Only a short hand-over counts as the writer's: the loop's next turns would take a core
            // that the writer and the observers of its commit need.
            let handedOver = settled && after &- before < Self.handOverNanoseconds
            guard spinPolicy.withLock({ $0.yielded(from: before, to: after, awaitedCame: handedOver) }) else {
                isPolling.store(false, ordering: .relaxed)
                return
            }
            guard after < pollsUntil.load(ordering: .relaxed) else { return stopPolling() }
            pollNextTurn()
        }
    }

    private func stopPolling() {
        spinPolicy.withLock { $0.spinEndedUncontended() }
        isPolling.store(false, ordering: .relaxed)
    }
}
