import Flow
import ServiceLifecycle

/// A ``JobWorker`` as a swift-service-lifecycle `Service`: it claims and runs jobs until the
/// `ServiceGroup`'s graceful shutdown, then stops claiming, lets running attempts finish for up to
/// ``gracePeriod``, and gives the jobs still running back to the store, to run again at once
/// elsewhere instead of after their leases.
///
/// ```swift
/// let worker = JobWorker(store: store, scheduler: loop.scheduler)
/// worker.register(sendEmail) { email, _ in mailer.send(to: email.to) }
/// let group = ServiceGroup(
///     services: [JobWorkerService(worker: worker, gracePeriod: .seconds(10))],
///     gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
///
/// The service starts the worker: register its handlers first, and do not start it yourself. If the
/// service's task is cancelled instead of shut down gracefully, the running jobs are given back at
/// once. The worker's scheduler (its loop) must keep running until `run()` returns: in a group, list
/// the service owning the loop (FlowServiceLifecycle's `EventLoopService`) before this one.
public struct JobWorkerService: Service {
    /// The worker this service runs.
    public let worker: JobWorker
    /// How long running attempts may take to finish once graceful shutdown began.
    public let gracePeriod: Duration

    /// A service running `worker`.
    ///
    /// - Parameters:
    ///   - worker: a worker with its handlers registered, not started.
    ///   - gracePeriod: how long running attempts may finish after graceful shutdown began; 10 s by
    ///     default.
    public init(worker: JobWorker, gracePeriod: Duration = .seconds(10)) {
        misusePrecondition(gracePeriod >= .zero, "JobWorkerService: the grace period must not be negative")
        self.worker = worker
        self.gracePeriod = gracePeriod
    }

    /// Starts the worker and runs it until graceful shutdown or cancellation, then shuts it down as
    /// described above; returns once every attempt's end is recorded.
    public func run() async throws {
        worker.start()
        let isGraceful = (try? await gracefulShutdown()) != nil
        let stopped = worker.shutdown(gracePeriod: isGraceful ? gracePeriod : .zero)
        // Awaited without the task's cancellation: giving the leases back must go on.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            stopped.onResult(on: .none) { _ in continuation.resume() }
        }
    }
}
