import Flow
import Foundation

/// Where jobs are kept: the narrow protocol every store (SQLite here, PostgreSQL later) implements, and
/// that ``JobClient`` and ``JobWorker`` use.
///
/// Every method is callable from any thread and returns at once; its future completes once the change
/// is durable (committed), and its callbacks run where the caller asked (`Scheduler.current` by
/// default). A store moves jobs only through ``JobLifecycle``'s transitions.
///
/// Fencing: ``heartbeat(_:leaseDuration:)``, ``finish(_:outcome:effects:)`` and ``release(_:)`` take the
/// ``JobLease`` of a claim and change the job only while it is still running under that lease's fence.
/// Otherwise they change nothing and fail with ``JobStoreError/leaseLost(_:)``: a worker whose lease
/// expired (and whose job someone else may run now) learns it and stops.
public protocol JobStore: AnyObject, Sendable {
    /// The wall clock the store reads for run times, leases and timestamps.
    var clock: JobClock { get }

    /// Adds jobs in one transaction: all of them or none. A job whose unique key matches an unfinished
    /// job adds nothing and answers that job (``EnqueuedJob/isDuplicate``).
    func enqueue(_ jobs: [NewJob]) -> Future<[EnqueuedJob]>

    /// Rescues jobs whose leases expired (see ``JobLifecycle``), then claims due jobs for a worker, at
    /// most ``ClaimRequest/slotsByQueue`` per queue, highest priority first, then earliest run time,
    /// then oldest; each claimed job is running under a new fence and a lease of the request's length.
    func claim(_ request: ClaimRequest) -> Future<ClaimResult>

    /// Extends a running job's lease by `leaseDuration` from now.
    func heartbeat(_ lease: JobLease, leaseDuration: Duration) -> Future<HeartbeatResult>

    /// Ends an attempt with `outcome`, running `effects` in the same transaction first: both commit,
    /// or neither does (an error thrown by `effects` rolls back and fails the future).
    ///
    /// - Returns: the job's record after the change.
    func finish(
        _ lease: JobLease, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) -> Future<JobRecord>

    /// Gives a running job back without finishing it: available at once, its attempt not counted.
    func release(_ lease: JobLease) -> Future<Void>

    /// Keeps the trace context of a running job's first attempt (``JobRecord/firstAttemptTraceContext``),
    /// so that its retries' spans link to it; changes the job only while it runs under `lease`'s fence.
    /// A default implementation keeps nothing.
    @discardableResult
    func recordFirstAttemptTrace(_ lease: JobLease, traceContext: [String: String]) -> Future<Void>

    /// Sets a queue's concurrency limit across every worker of the store (all processes), or removes
    /// it with `nil`: a claim takes no more jobs of the queue than the limit minus those running. A
    /// worker's own per-queue limit applies as well.
    @discardableResult
    func setConcurrencyLimit(_ maxRunning: Int?, forQueue queue: String) -> Future<Void>

    /// Cancels a queued job, or asks the worker of a running job to stop it.
    func cancel(_ id: JobID) -> Future<JobCancellation>

    /// The job's record, or `nil` when no job has this identifier.
    func job(_ id: JobID) -> Future<JobRecord?>

    /// Records in identifier order, filtered by state and queue when given, at most `limit`.
    func jobs(state: JobState?, queue: String?, limit: Int) -> Future<[JobRecord]>

    /// Runs `body` in one of the store's transactions, committed when `body` returns and rolled back
    /// when it throws; the future completes with what `body` returned once it is durable. `body` runs
    /// on the store's own thread and must not block on the store's futures.
    @discardableResult
    func transaction<Value: Sendable>(_ body: @escaping @Sendable (any JobTransaction) throws -> Value) -> Future<Value>

    /// Calls `observer` after each commit that enqueued jobs, requested a running job's cancellation or
    /// finished a job, in this process. Dispose the result to stop.
    func observe(_ observer: @escaping @Sendable (JobStoreNotification) -> Void) -> Disposable

    /// Fires a schedule's due and missed ticks in one transaction: each tick (schedule name, fire time)
    /// enqueues its job at most once in the store's lifetime, whatever the number of callers, and the
    /// schedule's state (last fired tick, paused) is kept for every process. A paused schedule fires
    /// nothing. A default implementation fails with ``ScheduleStoreError/unsupported(store:)``.
    func fireSchedule(_ firing: ScheduleFiring) -> Future<ScheduleFiringResult>

    /// The schedules the store has seen fired, in name order. A default implementation fails with
    /// ``ScheduleStoreError/unsupported(store:)``.
    func schedules() -> Future<[ScheduleState]>

    /// Pauses or resumes the schedule `name`, for every worker and process; answers its state after the
    /// change, or `nil` when the store has never seen the schedule. A default implementation fails with
    /// ``ScheduleStoreError/unsupported(store:)``.
    func setSchedulePaused(_ isPaused: Bool, name: String) -> Future<ScheduleState?>
}

extension JobStore {
    /// Keeps the trace context of a running job's first attempt, so that its retries' spans link to
    /// it. Like a heartbeat, it changes the job only while it runs under `lease`'s fence.
    ///
    /// A worker calls it before recording that a first attempt failed. This default keeps nothing:
    /// retries of a store without it link only to the enqueue.
    @discardableResult
    public func recordFirstAttemptTrace(_ lease: JobLease, traceContext: [String: String]) -> Future<Void> {
        Future(())
    }
}

/// A value bound to, or read from, an SQL statement.
public enum SQLValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob(Data)
}

/// The transaction of a store, as a job's effects or a caller's own writes see it: run SQL and
/// enqueue jobs, all of which commit together.
///
/// ```swift
/// store.transaction { transaction in
///     try transaction.execute("INSERT INTO orders(id) VALUES (?)", [.integer(7)])
///     try transaction.enqueue(NewJob(name: "ship", queue: "default", payload: Data(), maxAttempts: 5))
/// }
/// ```
public protocol JobTransaction {
    /// Runs one SQL statement with `arguments` bound to its `?` parameters.
    ///
    /// - Returns: the number of rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [SQLValue]) throws -> Int

    /// Runs one SQL query with `arguments` bound to its `?` parameters.
    ///
    /// - Returns: its rows, each as its columns' values.
    func query(_ sql: String, _ arguments: [SQLValue]) throws -> [[SQLValue]]

    /// Enqueues a job in this transaction: it exists once, and only if, the transaction commits.
    @discardableResult
    func enqueue(_ job: NewJob) throws -> EnqueuedJob
}

/// Why a store operation failed.
public enum JobStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The job is no longer running under this lease's fence (its lease expired and it was rescued,
    /// cancelled or claimed again): the update matched nothing.
    case leaseLost(JobLease)
    /// The database could not be opened or created at this path.
    case cannotOpen(path: String, message: String)
    /// The database file is not a database, or is damaged.
    case corrupt(message: String)
    /// The database can only be read (a read-only file, directory or mount).
    case readOnly(path: String)
    /// The disk (or the database's size limit) is full: the operation changed nothing, and the store
    /// works again once there is space.
    case diskFull(path: String)
    /// Another connection kept the database locked through every retry.
    case busy(message: String)
    /// The database's schema is newer than this version of FlowJobs understands.
    case newerSchema(found: Int, supported: Int)
    /// The store was closed.
    case closed
    /// The database reported an error.
    case database(code: Int32, message: String)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .leaseLost(let lease):
            "job \(lease.id) is no longer running under fence \(lease.fence): its lease was lost"
        case .cannotOpen(let path, let message): "cannot open the job database at \(path): \(message)"
        case .corrupt(let message): "the job database is damaged or not a database: \(message)"
        case .readOnly(let path): "the job database at \(path) is read-only"
        case .diskFull(let path): "the disk holding the job database at \(path) is full; nothing was written"
        case .busy(let message): "the job database stayed locked by another connection: \(message)"
        case .newerSchema(let found, let supported):
            "the job database has schema version \(found); this FlowJobs understands versions up to \(supported)"
        case .closed: "the job store is closed"
        case .database(let code, let message): "the job database failed (code \(code)): \(message)"
        }
    }
}
