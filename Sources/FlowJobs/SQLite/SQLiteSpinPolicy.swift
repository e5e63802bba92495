/// When a thread may spin (poll without sleeping) for a result another thread is about to hand it,
/// and for how long it must not after spinning cost more than it saved.
///
/// Spinning pays only while a core is free for each thread: on a busy machine the spinning thread
/// holds a core the other one needs, and once the scheduler takes it away it comes back later than a
/// thread woken from sleep would. So the spinning thread yields its core at each look and times the
/// yield: a yield that took longer than ``contentionNanoseconds`` ran another thread, and ends the
/// spin. One such yield says little on a machine with cores to spare (the kernel's own work takes a
/// core for as long now and then); ``contendedSpinsBeforePause`` spins in a row that each ended so
/// say the machine has no core to spare. Spinning then pauses, first for
/// ``initialPauseNanoseconds``, doubling with each further contended spin up to
/// ``maximumPauseNanoseconds``, until a spin goes uncontended again.
/// A value type that the thread owning it drives; times are ``EventLoop/uptimeNanoseconds``.
struct SQLiteSpinPolicy: Sendable {
    /// A yield longer than this ran another thread.
    static let contentionNanoseconds: UInt64 = 20_000
    /// A yield longer than this ran another thread for a share of the core's time: contention, even
    /// when what the spin awaited came meanwhile.
    static let timeSliceNanoseconds: UInt64 = 300_000
    static let initialPauseNanoseconds: UInt64 = 10_000_000
    static let maximumPauseNanoseconds: UInt64 = 1_000_000_000
    /// How many spins in a row must end contended before spinning pauses.
    static let contendedSpinsBeforePause = 2

    /// How long one spin lasts at most.
    let budgetNanoseconds: UInt64
    /// Until when spinning is paused.
    private(set) var pausedUntil: UInt64 = 0
    /// The next pause's length.
    private(set) var nextPauseNanoseconds = Self.initialPauseNanoseconds
    /// Spins that ended contended since the last uncontended one or the last pause.
    private(set) var contendedSpinsInARow = 0

    init(budgetNanoseconds: UInt64) {
        self.budgetNanoseconds = budgetNanoseconds
    }

    /// Whether a spin may start at `now`.
    func maySpin(at now: UInt64) -> Bool {
        budgetNanoseconds > 0 && now >= pausedUntil
    }

    /// Records a look that yielded from `before` to `after`, after which what the spin awaits had
    /// come (`awaitedCame`) or not; false when that yield was contended, in which case the spin must
    /// end, and spinning pauses if the spins before it ended so too.
    ///
    /// A yield longer than ``contentionNanoseconds`` but shorter than ``timeSliceNanoseconds``, after
    /// which the awaited work had come, is no contention: the thread it ran was most likely the one
    /// handing that work over, sharing this core, and the spin got what it waited for.
    mutating func yielded(from before: UInt64, to after: UInt64, awaitedCame: Bool) -> Bool {
        let took = after &- before
        guard took > Self.contentionNanoseconds, !awaitedCame || took > Self.timeSliceNanoseconds else { return true }
        contendedSpinsInARow += 1
        if contendedSpinsInARow >= Self.contendedSpinsBeforePause {
            contendedSpinsInARow = 0
            pausedUntil = after + nextPauseNanoseconds
            nextPauseNanoseconds = min(nextPauseNanoseconds * 2, Self.maximumPauseNanoseconds)
        }
        return false
    }

    /// Records a spin that ended uncontended: contention counts from none again, and the next pause is
    /// the shortest.
    mutating func spinEndedUncontended() {
        contendedSpinsInARow = 0
        nextPauseNanoseconds = Self.initialPauseNanoseconds
    }
}
