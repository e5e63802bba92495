import Flow

/// A job's life as a value: its state, attempts, fence and lease expiries, and the transitions between
/// them. Every store moves a job through this type, so that the rules hold the same on every database.
///
/// ```swift
/// var life = JobLifecycle(isDue: true, maxAttempts: 3)
/// try life.apply(.claimed)                  // running, attempt 1, fence 1
/// try life.apply(.failed(error: "timeout"))  // retryable
/// try life.apply(.claimed)                  // running, attempt 2, fence 2
/// try life.apply(.succeeded)                // completed
/// ```
///
/// Rules:
/// - A claim moves a claimable job (scheduled, available, retryable) to running, counts an attempt and
///   raises the fence by one: the fence only grows, so a worker holding an older fence is stale.
/// - A failure retries while attempts remain, else discards; a failure after a cancellation was
///   requested cancels.
/// - A lease that expires counts as the attempt it interrupted. The job is quarantined once its lease
///   has expired `maxLeaseExpiries` times with no error ever recorded (it kills its workers rather
///   than failing), discarded when no attempts remain, cancelled if a cancellation was requested,
///   and retryable otherwise.
/// - Cancelling a queued job cancels it at once; cancelling a running job only records the request,
///   and the job becomes cancelled when its worker stops it (``Event/stoppedByCancellation``).
/// - A release (a worker shutting down) gives a running job back, available at once, and takes back
///   the attempt it was counted.
/// - Nothing leaves a terminal state.
public struct JobLifecycle: Sendable, Hashable {
    /// The job's state.
    public private(set) var state: JobState
    /// Attempts counted so far, the running one included.
    public private(set) var attempt: Int
    /// How many attempts the job may have in all.
    public let maxAttempts: Int
    /// The fence of the latest claim: zero before the first one, then one more at each claim.
    public private(set) var fence: Int64
    /// How many times a lease on the job expired.
    public private(set) var leaseExpiries: Int
    /// Whether an attempt ever recorded an error.
    public private(set) var hasRecordedError: Bool
    /// Whether a cancellation was requested while the job ran.
    public private(set) var isCancellationRequested: Bool

    /// Something that happens to a job.
    public enum Event: Sendable, Hashable {
        /// The run time of a scheduled job came.
        case becameDue
        /// A worker claimed the job.
        case claimed
        /// The handler succeeded.
        case succeeded
        /// The handler failed with `error`: retried while attempts remain.
        case failed(error: String)
        /// The job failed with `error` in a way no retry fixes.
        case discarded(error: String)
        /// The job's lease expired; `maxLeaseExpiries` is the worker's quarantine threshold.
        case leaseExpired(maxLeaseExpiries: Int)
        /// Someone asked to cancel the job.
        case cancellationRequested
        /// The worker stopped the running job because its cancellation was requested.
        case stoppedByCancellation
        /// The worker gave the running job back without finishing it (graceful shutdown).
        case released
    }

    /// Creates the life of a new job: scheduled, or available when `isDue`.
    ///
    /// - Parameters:
    ///   - isDue: whether the job's run time has already come.
    ///   - maxAttempts: how many attempts the job may have; at least 1.
    public init(isDue: Bool, maxAttempts: Int) {
        misusePrecondition(maxAttempts >= 1, "JobLifecycle: maxAttempts must be at least 1, not \(maxAttempts)")
        self.init(state: isDue ? .available : .scheduled, attempt: 0, maxAttempts: maxAttempts, fence: 0,
                  leaseExpiries: 0, hasRecordedError: false, isCancellationRequested: false)
    }

    /// Recreates a life from what a store kept of it.
    ///
    /// - Parameters:
    ///   - state: the stored state.
    ///   - attempt: attempts counted so far.
    ///   - maxAttempts: how many attempts the job may have.
    ///   - fence: the fence of the latest claim.
    ///   - leaseExpiries: how many leases expired.
    ///   - hasRecordedError: whether an attempt recorded an error.
    ///   - isCancellationRequested: whether a cancellation was requested while the job ran.
    public init(
        state: JobState, attempt: Int, maxAttempts: Int, fence: Int64, leaseExpiries: Int,
        hasRecordedError: Bool, isCancellationRequested: Bool
    ) {
        self.state = state
        self.attempt = attempt
        self.maxAttempts = maxAttempts
        self.fence = fence
        self.leaseExpiries = leaseExpiries
        self.hasRecordedError = hasRecordedError
        self.isCancellationRequested = isCancellationRequested
    }

    /// Whether another attempt may follow the current one.
    public var hasAttemptsLeft: Bool { attempt < maxAttempts }

    /// Moves the job through `event`, or throws ``JobTransitionError`` (and changes nothing) when the
    /// event cannot happen in the current state.
    public mutating func apply(_ event: Event) throws(JobTransitionError) {
        let refused = JobTransitionError(state: state, event: event)
        switch (state, event) {
        case (.scheduled, .becameDue):
            state = .available
        case (.scheduled, .claimed), (.available, .claimed), (.retryable, .claimed):
            guard hasAttemptsLeft else { throw refused }
            state = .running
            attempt += 1
            fence += 1
        case (.running, .succeeded):
            state = .completed
        case (.running, .failed):
            hasRecordedError = true
            state = isCancellationRequested ? .cancelled : hasAttemptsLeft ? .retryable : .discarded
        case (.running, .discarded):
            hasRecordedError = true
            state = .discarded
        case (.running, .leaseExpired(let maxLeaseExpiries)):
            leaseExpiries += 1
            if isCancellationRequested {
                state = .cancelled
            } else if !hasRecordedError && leaseExpiries >= maxLeaseExpiries {
                state = .quarantined
            } else {
                state = hasAttemptsLeft ? .retryable : .discarded
            }
        case (.scheduled, .cancellationRequested), (.available, .cancellationRequested),
            (.retryable, .cancellationRequested):
            state = .cancelled
        case (.running, .cancellationRequested):
            isCancellationRequested = true
        case (.running, .stoppedByCancellation):
            state = .cancelled
        case (.running, .released):
            state = .available
            attempt -= 1
        default:
            throw refused
        }
    }
}

/// An event that cannot happen to a job in its state, such as completing a job that is not running.
public struct JobTransitionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The job's state when the event was refused.
    public let state: JobState
    /// The refused event.
    public let event: JobLifecycle.Event

    /// Describes `event` refused in `state`.
    public init(state: JobState, event: JobLifecycle.Event) {
        self.state = state
        self.event = event
    }

    /// A sentence naming the state and the event.
    public var description: String { "a job that is \(state.rawValue) cannot take the event \(event)" }
}
