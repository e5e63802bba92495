import Flow
import Foundation

/// A job's identifier in its store: unique for the store's lifetime, never reused.
public struct JobID: RawRepresentable, Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    /// The store's number for the job.
    public let rawValue: Int64

    /// Wraps a store's number for a job.
    public init(rawValue: Int64) { self.rawValue = rawValue }

    /// Orders identifiers by their numbers.
    public static func < (lhs: JobID, rhs: JobID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The number, as `#42`.
    public var description: String { "#\(rawValue)" }
}

/// Everything a store keeps about one job.
public struct JobRecord: Sendable, Hashable {
    /// The job's identifier.
    public let id: JobID
    /// The job type's name (``JobKind/name``).
    public let name: String
    /// The queue the job waits in.
    public let queue: String
    /// The encoded payload.
    public let payload: Data
    /// Where the job is in its life: state, attempts, fence, lease expiries.
    public let lifecycle: JobLifecycle
    /// Higher runs first among due jobs of a queue.
    public let priority: Int
    /// When the job may run next (for a running job: when it was due).
    public let runAt: Date
    /// When the running job's lease ends, or `nil` when the job is not running.
    public let leaseExpiresAt: Date?
    /// The identity of the worker that claimed it last, kept after it finishes (so a quarantined job
    /// names the worker it took down).
    public let worker: String?
    /// The key that keeps a second unfinished job with the same key from being enqueued.
    public let uniqueKey: String?
    /// The error of the latest failed attempt.
    public let lastError: String?
    /// When the job was enqueued.
    public let createdAt: Date
    /// When the job reached its terminal state.
    public let finishedAt: Date?
    /// The trace context of the job's enqueue, as a tracer injected it (empty when untraced): each
    /// attempt's span links to it.
    public let traceContext: [String: String]
    /// The trace context of the job's first attempt, recorded when that attempt failed (empty
    /// otherwise): a retry's span links to it.
    public let firstAttemptTraceContext: [String: String]
    /// How long each attempt of this job may run, given at its enqueue (``NewJob/timeout``): it
    /// takes the place of its kind's ``JobKind/timeout``. `nil` when the enqueue gave none.
    public let timeout: Duration?

    /// Creates a record; stores make these from their rows.
    ///
    /// - Parameters:
    ///   - id: the job's identifier.
    ///   - name: the job type's name.
    ///   - queue: the queue.
    ///   - payload: the encoded payload.
    ///   - lifecycle: state, attempts, fence and lease expiries.
    ///   - priority: higher runs first.
    ///   - runAt: when the job may run next.
    ///   - leaseExpiresAt: the end of the current lease.
    ///   - worker: the last claiming worker's identity.
    ///   - uniqueKey: the job's unique key.
    ///   - lastError: the latest attempt's error.
    ///   - createdAt: when the job was enqueued.
    ///   - finishedAt: when the job reached its terminal state.
    ///   - traceContext: the enqueue's trace context, as injected headers.
    ///   - firstAttemptTraceContext: the failed first attempt's trace context, as injected headers.
    ///   - timeout: each attempt's time limit given at the enqueue, or `nil` for the kind's.
    public init(
        id: JobID, name: String, queue: String, payload: Data, lifecycle: JobLifecycle, priority: Int,
        runAt: Date, leaseExpiresAt: Date?, worker: String?, uniqueKey: String?, lastError: String?,
        createdAt: Date, finishedAt: Date?, traceContext: [String: String] = [:],
        firstAttemptTraceContext: [String: String] = [:], timeout: Duration? = nil
    ) {
        self.timeout = timeout
        self.traceContext = traceContext
        self.firstAttemptTraceContext = firstAttemptTraceContext
        self.id = id
        self.name = name
        self.queue = queue
        self.payload = payload
        self.lifecycle = lifecycle
        self.priority = priority
        self.runAt = runAt
        self.leaseExpiresAt = leaseExpiresAt
        self.worker = worker
        self.uniqueKey = uniqueKey
        self.lastError = lastError
        self.createdAt = createdAt
        self.finishedAt = finishedAt
    }

    /// The job's state.
    public var state: JobState { lifecycle.state }
    /// Attempts counted so far.
    public var attempt: Int { lifecycle.attempt }
    /// The fence of the latest claim.
    public var fence: Int64 { lifecycle.fence }
}

/// A job to add to a store, its payload already encoded.
public struct NewJob: Sendable, Hashable {
    /// The job type's name.
    public var name: String
    /// The queue to wait in.
    public var queue: String
    /// The encoded payload.
    public var payload: Data
    /// Higher runs first among due jobs of a queue.
    public var priority: Int
    /// When the job may run first; `nil` for now.
    public var runAt: Date?
    /// How many attempts the job may have; at least 1.
    public var maxAttempts: Int
    /// While a job with this key is unfinished, enqueueing another with the same key adds nothing and
    /// answers the existing job.
    public var uniqueKey: String?
    /// The trace context of the enqueue, as a tracer's injected headers; empty when untraced.
    /// ``JobClient`` fills it when given a tracer.
    public var traceContext: [String: String]
    /// How long each attempt may run before its handler's future is cancelled and the attempt fails
    /// with `TimeoutError`, kept with the job (so a retry or a rescue keeps it too) in place of its
    /// kind's ``JobKind/timeout``; `nil` for the kind's.
    public var timeout: Duration?

    /// Describes a job to enqueue.
    ///
    /// - Parameters:
    ///   - name: the job type's name.
    ///   - queue: the queue.
    ///   - payload: the encoded payload.
    ///   - priority: higher runs first; 0 by default.
    ///   - runAt: the first run time; now by default.
    ///   - maxAttempts: attempts allowed; at least 1.
    ///   - uniqueKey: an optional key unique among unfinished jobs.
    ///   - traceContext: the enqueue's trace context, as injected headers; none by default.
    ///   - timeout: each attempt's time limit, in place of the kind's; `nil` (the default) for the kind's.
    public init(
        name: String, queue: String, payload: Data, priority: Int = 0, runAt: Date? = nil, maxAttempts: Int,
        uniqueKey: String? = nil, traceContext: [String: String] = [:], timeout: Duration? = nil
    ) {
        self.traceContext = traceContext
        misusePrecondition(maxAttempts >= 1, "NewJob \(name): maxAttempts must be at least 1, not \(maxAttempts)")
        misusePrecondition(
            timeout.map { $0 > .zero } ?? true, "NewJob \(name): the timeout must be positive, not \(timeout ?? .zero)")
        self.timeout = timeout
        self.name = name
        self.queue = queue
        self.payload = payload
        self.priority = priority
        self.runAt = runAt
        self.maxAttempts = maxAttempts
        self.uniqueKey = uniqueKey
    }
}

/// What a store answers for one enqueued job.
public struct EnqueuedJob: Sendable, Hashable {
    /// The job's identifier: the new job's, or the existing job's for a duplicate unique key.
    public let id: JobID
    /// Whether an unfinished job with the same unique key existed, so that nothing was added.
    public let isDuplicate: Bool
    /// The job's state once the enqueue committed.
    public let state: JobState

    /// Creates the answer for one enqueued job.
    public init(id: JobID, isDuplicate: Bool, state: JobState) {
        self.id = id
        self.isDuplicate = isDuplicate
        self.state = state
    }
}

/// A claim's proof: the job, and the fence the claim raised it to. A store accepts a heartbeat, a
/// finish or a release only while the job is running under this same fence.
public struct JobLease: Sendable, Hashable {
    /// The claimed job.
    public let id: JobID
    /// The fence of this claim.
    public let fence: Int64

    /// Creates a lease for `id` under `fence`.
    public init(id: JobID, fence: Int64) {
        self.id = id
        self.fence = fence
    }
}

/// What a worker asks of a store in one claim.
public struct ClaimRequest: Sendable, Hashable {
    /// Per queue, how many jobs the worker takes at most (its free slots).
    public var slotsByQueue: [String: Int]
    /// The job types the worker can run: it claims no others.
    public var names: Set<String>
    /// The worker's identity, kept on each claimed job.
    public var worker: String
    /// How long the lease lasts before another worker may take the job.
    public var leaseDuration: Duration
    /// Lease expiries with no error recorded after which a job is quarantined.
    public var maxLeaseExpiries: Int
    /// Whether the answer measures the request's queues (``ClaimResult/queues``): what is due and still
    /// waiting once the claim took its jobs. A count per queue, so only asked for when reported.
    public var measuresQueues: Bool
    /// How far ahead of their run times jobs are claimed: the claim also takes jobs due within this
    /// much from now, which the worker starts from a timer at their run times, so that the claim's
    /// round trip to the store is not between a job's run time and its start. Zero (the default)
    /// claims only due jobs; a store may ignore it and claim only due jobs.
    public var lookahead: Duration

    /// Describes a claim.
    ///
    /// - Parameters:
    ///   - slotsByQueue: per queue, the most jobs to claim.
    ///   - names: the job types the worker can run.
    ///   - worker: the worker's identity.
    ///   - leaseDuration: the lease's length.
    ///   - maxLeaseExpiries: the quarantine threshold.
    ///   - measuresQueues: whether to measure the queues' depth and lag; false by default.
    ///   - lookahead: how far ahead of their run times to claim jobs; none by default.
    public init(
        slotsByQueue: [String: Int], names: Set<String>, worker: String, leaseDuration: Duration,
        maxLeaseExpiries: Int, measuresQueues: Bool = false, lookahead: Duration = .zero
    ) {
        misusePrecondition(lookahead >= .zero, "ClaimRequest: the lookahead must not be negative")
        self.lookahead = lookahead
        self.slotsByQueue = slotsByQueue
        self.names = names
        self.worker = worker
        self.leaseDuration = leaseDuration
        self.maxLeaseExpiries = maxLeaseExpiries
        self.measuresQueues = measuresQueues
    }
}

/// What is due and waiting in one queue, as a claim measured it.
public struct QueueMeasurement: Sendable, Hashable {
    /// Jobs due now and not running (of every job type).
    public let dueCount: Int
    /// The run time of the longest-waiting due job, or `nil` when none is due.
    public let oldestDueAt: Date?

    /// Creates a queue's measurement.
    public init(dueCount: Int, oldestDueAt: Date?) {
        self.dueCount = dueCount
        self.oldestDueAt = oldestDueAt
    }
}

/// What a claim found.
public struct ClaimResult: Sendable {
    /// The claimed jobs, now running under the request's worker, highest priority first.
    public let jobs: [JobRecord]
    /// The earliest time something more may become claimable for this worker: a run time in a queue
    /// where the claim left slots free, or another worker's lease end. `nil` when nothing is pending;
    /// the worker then waits for an enqueue notification and does not poll.
    public let nextWakeAt: Date?
    /// The jobs whose leases had expired, rescued by this claim before it claimed, as the rescue left
    /// them: to be retried, discarded when out of attempts, cancelled when asked to, or quarantined.
    /// Each rescue is reported by exactly one claim.
    public let rescued: [JobRecord]
    /// Per queue of the request, what is due and still waiting after the claim, when the request
    /// asked (``ClaimRequest/measuresQueues``); empty otherwise.
    public let queues: [String: QueueMeasurement]

    /// Creates a claim's answer.
    ///
    /// - Parameters:
    ///   - jobs: the claimed jobs.
    ///   - nextWakeAt: when something more may become claimable.
    ///   - rescued: the jobs rescued from expired leases.
    ///   - queues: the request's queues, measured when asked.
    public init(
        jobs: [JobRecord], nextWakeAt: Date?, rescued: [JobRecord] = [], queues: [String: QueueMeasurement] = [:]
    ) {
        self.jobs = jobs
        self.nextWakeAt = nextWakeAt
        self.rescued = rescued
        self.queues = queues
    }
}

/// What a store says after a heartbeat.
public struct HeartbeatResult: Sendable, Hashable {
    /// The lease's new end.
    public let leaseExpiresAt: Date
    /// Whether someone asked to cancel the job: the worker should stop it.
    public let isCancellationRequested: Bool

    /// Creates a heartbeat's answer.
    public init(leaseExpiresAt: Date, isCancellationRequested: Bool) {
        self.leaseExpiresAt = leaseExpiresAt
        self.isCancellationRequested = isCancellationRequested
    }
}

/// How a worker ends an attempt.
public enum JobOutcome: Sendable, Hashable {
    /// The handler succeeded.
    case completed
    /// The handler failed: retried at `retryAt` while attempts remain, else discarded.
    case failed(error: String, retryAt: Date)
    /// The job failed in a way no retry fixes.
    case discarded(error: String)
    /// The worker stopped the job because its cancellation was requested.
    case cancelled
}

/// What cancelling a job did.
public enum JobCancellation: Sendable, Hashable {
    /// The job was queued and is now cancelled: it will not run.
    case cancelled
    /// The job is running: its worker is told to stop it, and it becomes cancelled when it stops
    /// (unless it finishes first).
    case requested
    /// The job had already finished in `state`.
    case alreadyFinished(JobState)
    /// No job has this identifier.
    case notFound
}

/// What a store tells its observers in this process after a commit.
public enum JobStoreNotification: Sendable, Hashable {
    /// Jobs were added to these queues (workers claim at once, or re-arm their timers).
    case enqueued(queues: Set<String>)
    /// Someone asked to cancel this running job.
    case cancellationRequested(JobID)
    /// The job reached a terminal state.
    case finished(JobRecord)
    /// Another connection to the database committed (another process's store, say), so any job's
    /// state may have changed: those waiting on a job read it again. Published by a store that
    /// watches for other connections' commits (a file ``SQLiteJobStore``), after the `enqueued`
    /// notification of the queues that have claimable jobs.
    case committedElsewhere
}
