import Foundation

/// The wall clock of a job store: run times, lease ends and timestamps are read from it and kept in
/// the database, so that they mean the same to every process.
///
/// Tests give a clock that follows FlowTesting's virtual clock:
///
/// ```swift
/// let start = Date(timeIntervalSince1970: 1_800_000_000)
/// let elapsed = Synchronization.Mutex(0.0)
/// let clock = JobClock { start.addingTimeInterval(elapsed.withLock { $0 }) }
/// ```
///
/// The wall clock may step backwards. Nothing breaks: a job due at a time that is now further away
/// waits longer, a lease lasts longer, and the fence, not the clock, decides which worker may finish a
/// job.
public struct JobClock: Sendable {
    private let read: @Sendable () -> Date

    /// A clock that reads `now`.
    @preconcurrency
    public init(_ now: @escaping @Sendable () -> Date) {
        read = now
    }

    /// The system's wall clock.
    public static let system = JobClock { Date() }

    /// The current time.
    public func now() -> Date { read() }
}
