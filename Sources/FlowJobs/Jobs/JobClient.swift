import Flow
import Foundation
import Synchronization
import Tracing

/// Enqueues, inspects and cancels jobs in a store. Callable from any thread, a detached task or async
/// code; every future completes once the store has committed.
///
/// ```swift
/// let client = JobClient(store: store)
/// let handle = try await client.enqueue(sendEmail, Email(to: "a@example.com")).get()
/// let record = try await handle.finished().get()   // completed, discarded, cancelled or quarantined
/// ```
public final class JobClient: Sendable {
    /// The store the jobs are kept in.
    public let store: any JobStore
    /// The tracer of the enqueues, or `nil` for none.
    public let tracer: (any Tracer)?

    private typealias Waiter = @Sendable (Result<JobRecord>) -> Void

    /// Those awaiting a job's end, by job, and the one store observation that serves them all.
    private struct Waiters {
        var observation: Disposable?
        var byJob: [JobID: [UInt64: Waiter]] = [:]
        var nextKey: UInt64 = 0
        /// Whether the waited jobs are being read again after another connection's commit.
        var isRereading = false
        /// Whether another connection committed during that read, which must then run again.
        var needsAnotherRead = false
    }

    private let waiters = Locked(Waiters())

    /// Creates a client of `store`.
    ///
    /// - Parameters:
    ///   - store: where the jobs are kept.
    ///   - tracer: when given, each enqueue is a producer span, a child of `ServiceContext.current`,
    ///     whose context is kept with its jobs: every attempt's span links to it (see
    ///     ``JobWorker/Configuration/tracer``). Pass `InstrumentationSystem.tracer` for the tracer
    ///     the process bootstrapped; `nil` (the default) for none.
    public init(store: any JobStore, tracer: (any Tracer)? = nil) {
        self.store = store
        self.tracer = tracer
    }

    deinit {
        waiters.withLock { $0.observation }?.dispose()
    }

    /// The job's end, as ``JobHandle/finished()`` describes it.
    func finished(_ id: JobID) -> Future<JobRecord> {
        Future<JobRecord>(on: .none) { [self] completion in
            let key = waiters.withLock { waiters in
                if waiters.observation == nil {
                    waiters.observation = store.observe { [weak self] notification in
                        switch notification {
                        case .finished(let record): self?.complete(record.id, with: .success(record))
                        case .committedElsewhere: self?.rereadWaitedJobs()
                        case .enqueued, .cancellationRequested: break
                        }
                    }
                }
                defer { waiters.nextKey += 1 }
                waiters.byJob[id, default: [:]][waiters.nextKey] = completion
                return waiters.nextKey
            }
            // Registered first, read second: an end committed in between is heard either way.
            store.job(id).onResult(on: .none) { [weak self] result in
                switch result {
                case .success(let record?) where record.state.isTerminal: self?.complete(id, with: .success(record))
                case .success(nil): self?.complete(id, with: .failure(JobHandleError.notFound(id)))
                case .success: break
                case .failure(let error): self?.complete(id, with: .failure(error))
                }
            }
            return Disposer { [weak self] in
                self?.waiters.withLock { waiters in
                    waiters.byJob[id]?[key] = nil
                    if waiters.byJob[id]?.isEmpty == true { waiters.byJob[id] = nil }
                }
            }
        }
    }

    /// Reads every waited job again after another connection's commit, completing those that ended
    /// there. One round of reads at a time; a commit during a round calls for one more after it.
    private func rereadWaitedJobs() {
        let ids = waiters.withLock { waiters -> [JobID] in
            guard !waiters.isRereading else {
                waiters.needsAnotherRead = true
                return []
            }
            guard !waiters.byJob.isEmpty else { return [] }
            waiters.isRereading = true
            waiters.needsAnotherRead = false
            return Array(waiters.byJob.keys)
        }
        guard !ids.isEmpty else { return }
        let remaining = Locked(ids.count)
        for id in ids {
            store.job(id).onResult(on: .none) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let record?) where record.state.isTerminal: complete(id, with: .success(record))
                case .success(nil): complete(id, with: .failure(JobHandleError.notFound(id)))
                // Unfinished, or unreadable for now: a later commit reads it again.
                case .success, .failure: break
                }
                guard remaining.withLock({ $0 -= 1; return $0 }) == 0 else { return }
                let again = waiters.withLock { waiters in
                    waiters.isRereading = false
                    return waiters.needsAnotherRead
                }
                if again { rereadWaitedJobs() }
            }
        }
    }

    private func complete(_ id: JobID, with result: Result<JobRecord>) {
        let waiting = waiters.withLock { $0.byJob.removeValue(forKey: id) } ?? [:]
        for waiter in waiting.values { waiter(result) }
    }

    /// Enqueues one job; the future completes once the job is durable, with its handle (for a unique
    /// key that matched an unfinished job: the existing job's handle, ``JobHandle/isDuplicate``).
    ///
    /// - Parameters:
    ///   - kind: the job's type.
    ///   - payload: the job's payload; an encoding error fails the future and adds nothing.
    ///   - options: run time, priority, queue, attempts and unique key, beyond the kind's defaults.
    @discardableResult
    public func enqueue<Payload>(
        _ kind: JobKind<Payload>, _ payload: Payload, options: EnqueueOptions = EnqueueOptions()
    ) -> Future<JobHandle> {
        enqueue(kind, [payload], options: options).map(on: .none) { $0[0] }
    }

    /// Enqueues jobs of one kind in one transaction: all of them, or none.
    ///
    /// ```swift
    /// client.enqueue(sendEmail, [Email(to: "a@example.com"), Email(to: "b@example.com")])
    /// ```
    @discardableResult
    public func enqueue<Payload>(
        _ kind: JobKind<Payload>, _ payloads: [Payload], options: EnqueueOptions = EnqueueOptions()
    ) -> Future<[JobHandle]> {
        var jobs: [NewJob]
        do {
            jobs = try payloads.map { try kind.newJob($0, options: options, clock: store.clock) }
        } catch {
            return Future(error: error)
        }
        guard let tracer else {
            return store.enqueue(jobs).map(on: .none) { [self] enqueued in
                enqueued.map { JobHandle(id: $0.id, isDuplicate: $0.isDuplicate, client: self) }
            }
        }
        let span = tracer.startSpan("enqueue \(kind.name)", context: ServiceContext.current ?? .topLevel, ofKind: .producer)
        span.attributes["job.name"] = kind.name
        span.attributes["job.queue"] = jobs.first?.queue ?? kind.queue
        span.attributes["job.count"] = jobs.count
        var headers: [String: String] = [:]
        tracer.inject(span.context, into: &headers, using: TraceHeaders())
        for index in jobs.indices { jobs[index].traceContext = headers }
        return store.enqueue(jobs).map(on: .none) { [self] enqueued in
            enqueued.map { JobHandle(id: $0.id, isDuplicate: $0.isDuplicate, client: self) }
        }.onResult(on: .none) { result in
            if case .failure(let error) = result { span.recordError(error) }
            span.end()
        }
    }

    /// The handle of the job with identifier `id`.
    public func handle(for id: JobID) -> JobHandle {
        JobHandle(id: id, isDuplicate: false, client: self)
    }

    /// Cancels a queued job, or asks the worker running it to stop it.
    @discardableResult
    public func cancel(_ id: JobID) -> Future<JobCancellation> {
        store.cancel(id)
    }

    /// The job's record, or `nil` when no job has this identifier.
    public func job(_ id: JobID) -> Future<JobRecord?> {
        store.job(id)
    }

    /// Records in identifier order, filtered by state and queue when given.
    public func jobs(state: JobState? = nil, queue: String? = nil, limit: Int = 100) -> Future<[JobRecord]> {
        store.jobs(state: state, queue: queue, limit: limit)
    }
}

/// An enqueued job: await its end, or cancel it.
public struct JobHandle: Sendable, Hashable {
    /// The job's identifier.
    public let id: JobID
    /// Whether the enqueue matched an unfinished job's unique key, so that this is that job.
    public let isDuplicate: Bool
    private let client: JobClient

    init(id: JobID, isDuplicate: Bool, client: JobClient) {
        self.id = id
        self.isDuplicate = isDuplicate
        self.client = client
    }

    /// Completes with the job's record once it is completed, discarded, cancelled or quarantined.
    ///
    /// It learns of the end from the store's notifications: a worker of this process finishing the
    /// job, a cancellation, a rescue by a claim of this process, and, with a store that watches for
    /// other connections' commits (a file ``SQLiteJobStore``), an end committed by another process,
    /// read again after that commit (``JobStoreNotification/committedElsewhere``). Fails with
    /// ``JobHandleError/notFound(_:)`` for an unknown job.
    public func finished() -> Future<JobRecord> {
        client.finished(id)
    }

    /// Cancels the job if it is queued, or asks its worker to stop it if it is running.
    @discardableResult
    public func cancel() -> Future<JobCancellation> {
        client.cancel(id)
    }

    /// Handles are equal when they name the same job.
    public static func == (lhs: JobHandle, rhs: JobHandle) -> Bool { lhs.id == rhs.id }

    /// Hashes the job's identifier.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// Why a handle cannot report its job.
public enum JobHandleError: Error, Hashable, Sendable {
    /// No job has this identifier in the store.
    case notFound(JobID)
}

/// Injects a trace context into, and extracts it from, the headers kept with a job.
struct TraceHeaders: Injector, Extractor {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }

    func extract(key: String, from carrier: [String: String]) -> String? {
        carrier[key]
    }
}
