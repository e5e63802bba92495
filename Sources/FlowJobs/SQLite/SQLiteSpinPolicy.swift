/// When a thread may spin (poll without sleeping) for a result another thread is about to hand it,
/// and for how long it must not after spinning cost more than it saved.
///
/// Spinning pays only while a core is free for each thread: on a busy machine the spinning thread
/// holds a core the other one needs, and once the scheduler takes it away it comes back later than a
/// thread woken from sleep would. So the spinning thread yields its core at each look and times the
/// yield: a yield that took longer than ``contentionNanoseconds`` ran another thread, and the machine
/// has no core to spare. Spinning then pauses, first for ``initialPauseNanoseconds``, doubling with
/// each contended spin up to ``maximumPauseNanoseconds``, until a spin goes uncontended again.
/// A value type that the thread owning it drives; times are ``EventLoop/uptimeNanoseconds``.
struct SQLiteSpinPolicy: Sendable {
    /// A yield longer than this ran another thread.
    static let contentionNanoseconds: UInt64 = 20_000
    static let initialPauseNanoseconds: UInt64 = 10_000_000
    static let maximumPauseNanoseconds: UInt64 = 1_000_000_000

    /// How long one spin lasts at most.
    let budgetNanoseconds: UInt64
    /// Until when spinning is paused.
    private(set) var pausedUntil: UInt64 = 0
    /// The next pause's length.
    private(set) var nextPauseNanoseconds = Self.initialPauseNanoseconds

    init(budgetNanoseconds: UInt64) {
        self.budgetNanoseconds = budgetNanoseconds
    }

    /// Whether a spin may start at `now`.
    func maySpin(at now: UInt64) -> Bool {
        budgetNanoseconds > 0 && now >= pausedUntil
    }

    /// Records a look that yielded from `before` to `after`; false when that yield was contended, in
    /// which case the spin must end and spinning pauses.
    mutating func yielded(from before: UInt64, to after: UInt64) -> Bool {
        guard after &- before > Self.contentionNanoseconds else { return true }
        pausedUntil = after + nextPauseNanoseconds
        nextPauseNanoseconds = min(nextPauseNanoseconds * 2, Self.maximumPauseNanoseconds)
        return false
    }

    /// Records a spin that ended uncontended: the next contention pauses for the shortest time again.
    mutating func spinEndedUncontended() {
        nextPauseNanoseconds = Self.initialPauseNanoseconds
    }
}
