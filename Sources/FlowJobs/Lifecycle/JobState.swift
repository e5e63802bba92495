/// Where a job is in its life.
///
/// ```
/// scheduled ─► available ─► running ─► completed
///     │            │           ├─────► retryable ─► running …
///     │            │           ├─────► discarded
///     │            │           ├─────► quarantined
///     └────────────┴───────────┴─────► cancelled
/// ```
///
/// `completed`, `discarded`, `cancelled` and `quarantined` are terminal: nothing moves a job out of
/// them. See ``JobLifecycle`` for every transition.
public enum JobState: String, Sendable, Hashable, CaseIterable, Codable {
    /// Waiting for its run time, which is still in the future.
    case scheduled
    /// Due: the next worker with a free slot in its queue claims it.
    case available
    /// Claimed by a worker, which holds a lease on it.
    case running
    /// Its handler succeeded. Terminal.
    case completed
    /// Its last attempt failed (or its lease expired) and it runs again at its run time.
    case retryable
    /// It failed for good: no attempts left, or an error no retry can fix (a payload that no longer
    /// decodes). Terminal.
    case discarded
    /// Cancelled before it finished. Terminal.
    case cancelled
    /// Its lease expired too many times with no error recorded: taken as a job that kills its worker,
    /// and set aside. Terminal.
    case quarantined

    /// Whether nothing moves the job out of this state.
    public var isTerminal: Bool {
        switch self {
        case .completed, .discarded, .cancelled, .quarantined: true
        case .scheduled, .available, .running, .retryable: false
        }
    }

    /// Whether a worker may claim a job in this state once its run time has come.
    public var isClaimable: Bool {
        switch self {
        case .scheduled, .available, .retryable: true
        case .running, .completed, .discarded, .cancelled, .quarantined: false
        }
    }
}
