import Flow
import Synchronization
import Tracing

/// What a handler knows of the attempt it runs, and where it puts the writes that must commit together
/// with the job's completion.
///
/// ```swift
/// worker.register(chargeOrder) { order, context in
///     context.addCompletionEffect { transaction in
///         try transaction.execute("INSERT INTO charges(order_id) VALUES (?)", [.integer(order.id)])
///     }
///     return Future()
/// }
/// ```
public final class JobContext: Sendable {
    /// The job's record as the claim left it: running, with this attempt counted.
    public let record: JobRecord
    /// The claiming worker's identity.
    public let worker: String
    /// The context of this attempt's span when the worker traces (``JobWorker/Configuration/tracer``),
    /// else top-level. It is also `ServiceContext.current` while the handler is called, so spans the
    /// handler starts then are children of the attempt's.
    public let serviceContext: ServiceContext
    /// The completion effects added so far, until the attempt ends (`nil` from then on): an effect
    /// often captures this context, so the context must let go of its effects for either to be freed.
    private let effects = Locked<[@Sendable (any JobTransaction) throws -> Void]?>([])
    /// Whether the handler writes the job's completion itself (``completesInHandlerTransaction()``).
    private let isCompletedByHandler = Atomic<Bool>(false)

    init(record: JobRecord, worker: String, serviceContext: ServiceContext = .topLevel) {
        self.record = record
        self.worker = worker
        self.serviceContext = serviceContext
    }

    /// The job's identifier.
    public var id: JobID { record.id }
    /// This attempt's number: 1 for the first.
    public var attempt: Int { record.attempt }
    /// The lease of this attempt (the job and its fence).
    public var lease: JobLease { JobLease(id: record.id, fence: record.fence) }

    /// Adds writes that run in the transaction that records the job as completed, after the handler
    /// succeeds: they commit together with the completion, or not at all. When the worker has lost
    /// the job's lease, or an effect throws, nothing of them commits (the attempt then fails with the
    /// error, and the job is retried). Effects run in the order added, on the store's writer: they
    /// must not wait for the store's futures. An effect added once the attempt has ended is dropped.
    public func addCompletionEffect(_ effect: @escaping @Sendable (any JobTransaction) throws -> Void) {
        misusePrecondition(
            !isCompletedByHandler.load(ordering: .acquiring),
            "JobContext.addCompletionEffect: job \(id) is completed in the handler's own transaction "
                + "(completesInHandlerTransaction), so no effect added here would run: write it in that transaction")
        effects.withLock { $0?.append(effect) }
    }

    /// Tells the worker that the handler writes this attempt's completion itself, in a transaction
    /// of another client on the store's database, together with its own writes (FlowJobsPostgresNIO's
    /// `PostgresConnection.completeJob` calls it before it sends the completion). Integrations call
    /// it; a handler calls the integration.
    ///
    /// When the attempt then ends, the worker first reads the job: if that transaction committed, the
    /// job is completed under this attempt's fence, and the worker reports the attempt as finished
    /// with that record, writing nothing. Otherwise (the transaction rolled back, or never ran) the
    /// worker records the attempt's end as usual: completed when the handler succeeded, failed or
    /// retried when it threw. A heartbeat that finds the job gone meanwhile does not stop the handler:
    /// the completion may be committing.
    ///
    /// An attempt completed this way has no completion effects (``addCompletionEffect(_:)``): those
    /// run in the store's transaction, which no longer completes the job. Adding one before or after
    /// this call stops with a message.
    public func completesInHandlerTransaction() {
        let hasEffects = effects.withLock { !($0?.isEmpty ?? true) }
        misusePrecondition(
            !hasEffects,
            "JobContext.completesInHandlerTransaction: job \(id) has completion effects (addCompletionEffect), "
                + "which run only when the worker completes the job: write them in the handler's transaction instead")
        isCompletedByHandler.store(true, ordering: .releasing)
    }

    /// Whether the handler said it writes the job's completion itself.
    var isCompletionWrittenByHandler: Bool { isCompletedByHandler.load(ordering: .acquiring) }

    /// Ends the attempt's effects: returns those added so far, as one (`nil` when there are none),
    /// and lets go of them; effects added later are dropped.
    func takeCompletionEffects() -> (@Sendable (any JobTransaction) throws -> Void)? {
        let all = effects.withLock { effects in
            defer { effects = nil }
            return effects ?? []
        }
        guard !all.isEmpty else { return nil }
        return { transaction in
            for effect in all { try effect(transaction) }
        }
    }
}

/// What a worker did, for logs and tests.
public enum JobWorkerEvent: Sendable {
    /// An attempt starts: the job's record as claimed.
    case attemptStarted(JobRecord)
    /// An attempt ended and the store recorded it: the record after the change.
    case attemptFinished(JobRecord)
    /// The store refused the worker's update because the job's lease had been lost; the worker let
    /// the job go.
    case leaseLost(JobLease)
    /// The worker gave a running job back to the store while shutting down.
    case released(JobLease)
    /// A store operation failed; the worker carries on (a claim is tried again after a second).
    case storeFailed(String)
}

/// A payload that no longer decodes as the job kind's payload type: the job is discarded, and this
/// error recorded, since no retry can fix it.
public struct JobPayloadDecodingError: Error, CustomStringConvertible, Sendable {
    /// The job kind's name.
    public let name: String
    /// The decoder's error, described.
    public let underlying: String

    /// Says which kind's payload failed to decode, and why.
    public var description: String { "the payload of a \(name) job does not decode: \(underlying)" }
}
