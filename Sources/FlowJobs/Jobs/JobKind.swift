import Flow
import FlowTimers
import Foundation

/// A type of job: its name in the store, its payload's type, and how its attempts are run and retried.
/// The same value enqueues jobs (through a ``JobClient``) and registers their handler (with a
/// ``JobWorker``).
///
/// ```swift
/// struct Email: Codable, Sendable { let to: String }
/// let sendEmail = JobKind<Email>(name: "send-email", maxAttempts: 5, timeout: .seconds(30))
/// ```
public struct JobKind<Payload: Codable & Sendable>: Sendable {
    /// The name the store keeps with each job: a worker runs a job with the handler registered for it.
    public let name: String
    /// The queue jobs wait in unless the enqueue names another; `"default"` by default.
    public var queue: String
    /// Higher runs first among due jobs of a queue; 0 by default.
    public var priority: Int
    /// How many attempts a job may have in all; 20 by default.
    public var maxAttempts: Int
    /// The wait before retry `n` (1 for the first retry); exponential from 1 s to 1 hour, jittered,
    /// by default.
    public var backoff: Backoff
    /// How long an attempt may run before its handler's future is cancelled and the attempt fails with
    /// `TimeoutError`; `nil` (the default) for no limit.
    public var timeout: Duration?

    /// Describes a type of job.
    ///
    /// - Parameters:
    ///   - name: the name kept with each job; unique among the kinds of one store.
    ///   - queue: the default queue.
    ///   - priority: the default priority.
    ///   - maxAttempts: attempts allowed in all; at least 1.
    ///   - backoff: the wait before each retry.
    ///   - timeout: the longest an attempt may run.
    public init(
        name: String,
        queue: String = "default",
        priority: Int = 0,
        maxAttempts: Int = 20,
        backoff: Backoff = .exponential(initial: 1, maximum: 3600, jitter: .equal),
        timeout: Duration? = nil
    ) {
        misusePrecondition(!name.isEmpty, "JobKind: the name must not be empty")
        misusePrecondition(maxAttempts >= 1, "JobKind \(name): maxAttempts must be at least 1, not \(maxAttempts)")
        misusePrecondition(timeout.map { $0 > .zero } ?? true, "JobKind \(name): the timeout must be positive")
        self.name = name
        self.queue = queue
        self.priority = priority
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.timeout = timeout
    }

    /// Encodes `payload` the way the store keeps it (JSON).
    public func encode(_ payload: Payload) throws -> Data {
        try JSONEncoder().encode(payload)
    }

    /// Decodes a stored payload.
    public func decode(_ data: Data) throws -> Payload {
        try JSONDecoder().decode(Payload.self, from: data)
    }
}

/// When and where an enqueued job runs, beyond its kind's defaults.
///
/// ```swift
/// client.enqueue(sendEmail, Email(to: "a@example.com"), options: EnqueueOptions(after: .seconds(60)))
/// client.enqueue(sendEmail, Email(to: "b@example.com"), options: EnqueueOptions(uniqueKey: "welcome-b"))
/// ```
public struct EnqueueOptions: Sendable, Hashable {
    /// The first run time; now when neither this nor ``after`` is set.
    public var at: Date?
    /// How long from now until the first run.
    public var after: Duration?
    /// The priority, instead of the kind's.
    public var priority: Int?
    /// The queue, instead of the kind's.
    public var queue: String?
    /// The attempts allowed, instead of the kind's.
    public var maxAttempts: Int?
    /// While a job with this key is unfinished, enqueueing another with the same key adds nothing and
    /// answers the existing job.
    public var uniqueKey: String?
    /// How long each attempt may run, instead of the kind's ``JobKind/timeout``: kept with the job, so
    /// its retries and a rescue after a crash keep it too.
    public var timeout: Duration?

    /// Describes when and where to run a job.
    ///
    /// - Parameters:
    ///   - at: the first run time.
    ///   - after: the delay until the first run; not together with `at`.
    ///   - priority: the priority, instead of the kind's.
    ///   - queue: the queue, instead of the kind's.
    ///   - maxAttempts: attempts allowed, instead of the kind's.
    ///   - uniqueKey: a key unique among unfinished jobs.
    ///   - timeout: how long each attempt may run, instead of the kind's.
    public init(
        at: Date? = nil, after: Duration? = nil, priority: Int? = nil, queue: String? = nil,
        maxAttempts: Int? = nil, uniqueKey: String? = nil, timeout: Duration? = nil
    ) {
        misusePrecondition(at == nil || after == nil, "EnqueueOptions: give a run time (at:) or a delay (after:), not both")
        misusePrecondition(maxAttempts.map { $0 >= 1 } ?? true, "EnqueueOptions: maxAttempts must be at least 1")
        misusePrecondition(timeout.map { $0 > .zero } ?? true, "EnqueueOptions: the timeout must be positive")
        self.timeout = timeout
        self.at = at
        self.after = after
        self.priority = priority
        self.queue = queue
        self.maxAttempts = maxAttempts
        self.uniqueKey = uniqueKey
    }
}

extension JobKind {
    /// The store's description of a job of this kind with `payload` and `options`, its run time read
    /// from `clock`.
    ///
    /// ```swift
    /// let job = try sendEmail.newJob(Email(to: "a@example.com"), clock: store.clock)
    /// store.transaction { transaction in try transaction.enqueue(job) }
    /// ```
    public func newJob(_ payload: Payload, options: EnqueueOptions = EnqueueOptions(), clock: JobClock) throws -> NewJob {
        let runAt = options.at ?? options.after.map { clock.now().addingTimeInterval($0.seconds) }
        return NewJob(
            name: name, queue: options.queue ?? queue, payload: try encode(payload),
            priority: options.priority ?? priority, runAt: runAt, maxAttempts: options.maxAttempts ?? maxAttempts,
            uniqueKey: options.uniqueKey, timeout: options.timeout)
    }
}
