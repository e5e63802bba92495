import Flow
import FlowTimers
import Foundation
import Logging
import Synchronization
import Tracing

/// Runs jobs from a store: claims due jobs of its queues up to each queue's concurrency limit, runs
/// their handlers on its scheduler, and records each attempt's end.
///
/// ```swift
/// let worker = JobWorker(store: store, configuration: .init(concurrencyByQueue: ["default": 4]))
/// worker.register(sendEmail) { email, context in
///     mailer.send(to: email.to)   // a Future<Void>
/// }
/// worker.start()
/// // …
/// worker.shutdown(gracePeriod: .seconds(10))
/// ```
///
/// - **Time**: due times and lease ends are armed as timers on the worker's scheduler; an idle worker
///   does no polling, and an enqueue in this process wakes it at once (one in another process, through
///   ``SQLiteJobStore``'s watch of the database's files).
/// - **Attempts**: a handler's failure is retried after the kind's ``JobKind/backoff`` while attempts
///   remain; a timeout cancels the handler's future and fails the attempt with `TimeoutError`; a
///   payload that no longer decodes discards the job with the decoding error recorded.
/// - **Leases**: each claim holds a lease (15 s by default) that heartbeats extend. A worker that loses
///   its lease (the store rescued the job after the lease ended) cancels the handler and records
///   nothing: the fence keeps its late update out.
/// - **Unknown jobs**: a worker claims only the kinds registered with it. A job whose name no worker
///   knows stays queued, untouched, until a worker that knows it runs, or someone cancels it.
/// - **Cancellation**: cancelling a running job (``JobClient/cancel(_:)``) cancels its handler's
///   future, which disposes the handler's `Disposable` or cancels its task.
/// - **Shutdown**: ``shutdown(gracePeriod:)`` stops claiming, lets running attempts finish until the
///   grace period ends, then cancels them and gives their jobs back to the store, to run again at once.
///
/// Callable from any thread, a detached task or async code. Keep a reference to the worker while it
/// runs: one let go without ``shutdown(gracePeriod:)`` stops claiming and heartbeating, cancels its
/// running handlers, and its running jobs are rescued by other workers once their leases end.
public final class JobWorker: Sendable {
    /// How a worker runs.
    public struct Configuration: Sendable {
        /// The queues to take jobs from, and for each the most jobs this worker runs at once.
        public var concurrencyByQueue: [String: Int]
        /// How long a claim lasts without a heartbeat; 15 s by default.
        public var leaseDuration: Duration
        /// How often a running job's lease is extended; a third of the lease by default.
        public var heartbeatInterval: Duration?
        /// Lease expiries with no error recorded after which a job is quarantined; 3 by default.
        public var maxLeaseExpiries: Int
        /// The worker's name in the store (kept on the jobs it claims); host, process and a random
        /// suffix by default.
        public var identity: String
        /// Called with each of the worker's events, for logs and metrics.
        public var onEvent: (@Sendable (JobWorkerEvent) -> Void)?
        /// Where the worker logs one line per attempt's start (debug) and end (info when completed or
        /// cancelled, warning when retried or the lease was lost, error when discarded), with the job's
        /// identifier, name, queue, attempt and the worker's identity as metadata; `nil` (the default)
        /// for no logging.
        public var logger: Logger?
        /// Where the worker reports its attempts, run times, lag, claim latency, queue depth, lease
        /// expiries and quarantines (``JobMetrics``); `nil` (the default) for no metrics.
        public var metrics: JobMetrics?
        /// The tracer of the worker's attempts, or `nil` (the default) for none. Each attempt is a
        /// consumer span named after the job's kind, starting a trace of its own and linked to the
        /// enqueue's span (kept with the job by a ``JobClient`` with a tracer); a retry's span links to
        /// the first attempt's as well. Pass `InstrumentationSystem.tracer` for the tracer the process
        /// bootstrapped.
        public var tracer: (any Tracer)?

        /// Describes how a worker runs.
        ///
        /// - Parameters:
        ///   - concurrencyByQueue: per queue, the most jobs run at once; `["default": 10]` by default.
        ///   - leaseDuration: how long a claim lasts without a heartbeat.
        ///   - heartbeatInterval: how often leases are extended; a third of the lease by default.
        ///   - maxLeaseExpiries: the quarantine threshold.
        ///   - identity: the worker's name in the store.
        ///   - onEvent: called with each of the worker's events.
        ///   - logger: where to log each attempt's start and end.
        ///   - metrics: where to report the worker's metrics.
        ///   - tracer: the tracer of the worker's attempts.
        public init(
            concurrencyByQueue: [String: Int] = ["default": 10],
            leaseDuration: Duration = .seconds(15),
            heartbeatInterval: Duration? = nil,
            maxLeaseExpiries: Int = 3,
            identity: String? = nil,
            onEvent: (@Sendable (JobWorkerEvent) -> Void)? = nil,
            logger: Logger? = nil,
            metrics: JobMetrics? = nil,
            tracer: (any Tracer)? = nil
        ) {
            misusePrecondition(
                concurrencyByQueue.values.allSatisfy { $0 >= 1 },
                "JobWorker.Configuration: each queue's concurrency must be at least 1, not \(concurrencyByQueue)")
            misusePrecondition(leaseDuration > .zero, "JobWorker.Configuration: the lease must be positive")
            misusePrecondition(maxLeaseExpiries >= 1, "JobWorker.Configuration: maxLeaseExpiries must be at least 1")
            misusePrecondition(
                heartbeatInterval.map { $0 > .zero && $0 < leaseDuration } ?? true,
                "JobWorker.Configuration: the heartbeat interval must be positive and shorter than the lease")
            self.concurrencyByQueue = concurrencyByQueue
            self.leaseDuration = leaseDuration
            self.heartbeatInterval = heartbeatInterval
            self.maxLeaseExpiries = maxLeaseExpiries
            self.identity = identity
                ?? "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UUID().uuidString.prefix(8).lowercased())"
            self.onEvent = onEvent
            self.logger = logger
            self.metrics = metrics
            self.tracer = tracer
        }
    }

    private struct Registration: Sendable {
        let run: @Sendable (JobRecord, JobContext) -> Future<Void>
        let backoff: Backoff
        let timeout: Duration?
    }

    private enum StopReason {
        case timedOut(Duration)
        case cancellationRequested
        case leaseLost
        case shutdown
    }

    private struct RunningAttempt {
        let record: JobRecord
        let context: JobContext
        /// When the worker took the claim's answer: the attempt's start.
        let startedAt: Date
        /// The future observing the handler: cancelling it cancels the handler's future upstream.
        var observation: Future<Void>?
        /// The attempt's timers, disposed when it ends.
        let timers = DisposeBag()
        /// The next heartbeat: one timer at a time, replaced at each re-arm (and held by `timers`).
        let heartbeat = ReplaceableTimer()
        /// The attempt's span, when the worker traces; ended when the attempt ends.
        let span: (any Span)?
        var lease: JobLease { JobLease(id: record.id, fence: record.fence) }
    }

    private enum Phase {
        case created, running, draining, stopped
    }

    private struct State {
        var phase = Phase.created
        var registrations: [String: Registration] = [:]
        var running: [JobID: RunningAttempt] = [:]
        var runningByQueue: [String: Int] = [:]
        var isClaiming = false
        var needsAnotherClaim = false
        var wakeTimer: Disposable?
        var storeObservation: Disposable?
        /// Store writes (finishes, releases) not yet settled: a drain waits for them.
        var pendingWrites = 0
        var drainCompletion: (@Sendable (Result<Void>) -> Void)?
        var drainDeadline: Disposable?
    }

    /// The store the jobs come from.
    public let store: any JobStore
    /// Where handlers, timers and the worker's own bookkeeping run.
    public let scheduler: Scheduler
    /// How the worker runs.
    public let configuration: Configuration
    private let state = Locked(State())
    /// The schedules declared with ``schedule(_:_:job:payload:overlap:catchUp:)`` and their timers.
    let declaredSchedules = JobWorkerSchedules()
    /// How far ahead of its run time a delayed job is claimed: it then starts from a loop timer at
    /// that time, with no round trip to the store between the two.
    static let claimLookahead: Duration = .milliseconds(20)

    /// Creates a worker of `store` whose handlers and timers run on `scheduler` (`Scheduler.current`
    /// by default: a loop's scheduler, or FlowTesting's virtual clock in tests). It claims nothing
    /// before ``start()``.
    public init(store: any JobStore, scheduler: Scheduler = .current, configuration: Configuration = Configuration()) {
        self.store = store
        self.scheduler = scheduler
        self.configuration = configuration
    }

    deinit {
        // A worker let go without a shutdown stops listening and waking; its running jobs' leases
        // lapse and other workers rescue them. Their handlers are cancelled: nothing is left to
        // record their ends, and a handler's future left observed would keep its operation (and
        // whatever its completion is stored in) alive for good.
        // A drain still waiting for its attempts' ends will not see them: its future fails with
        // `FutureError.aborted` rather than staying pending.
        let (observation, wakeTimer, running, drain, drainDeadline) = state.withLock { state in
            defer {
                state.drainCompletion = nil
                state.drainDeadline = nil
            }
            return (
                state.storeObservation, state.wakeTimer, Array(state.running.values), state.drainCompletion,
                state.drainDeadline
            )
        }
        observation?.dispose()
        wakeTimer?.dispose()
        drainDeadline?.dispose()
        stopSchedules()
        Self.abandon(running)
        drain?(.failure(FutureError.aborted))
    }

    // MARK: Registering handlers

    /// Registers the handler of `kind`: it gets each job's decoded payload and its ``JobContext``,
    /// and returns a future whose success completes the job and whose failure fails the attempt.
    ///
    /// Cancelling the returned future (a timeout, a cancellation, a lost lease, the end of a
    /// shutdown's grace period) disposes the handler's operation. Register before ``start()``.
    public func register<Payload>(
        _ kind: JobKind<Payload>, handler: @escaping @Sendable (Payload, JobContext) -> Future<Void>
    ) {
        let registration = Registration(
            run: { record, context in
                let payload: Payload
                do {
                    payload = try kind.decode(record.payload)
                } catch {
                    return Future(error: JobPayloadDecodingError(name: kind.name, underlying: "\(error)"))
                }
                return handler(payload, context)
            },
            backoff: kind.backoff, timeout: kind.timeout)
        state.withLock { state in
            misusePrecondition(state.phase == .created, "JobWorker.register(\(kind.name)): register before start()")
            misusePrecondition(
                state.registrations[kind.name] == nil, "JobWorker.register: \(kind.name) is registered already")
            state.registrations[kind.name] = registration
        }
    }

    /// Registers an `async` handler of `kind`: it runs in a task preferring the worker's loop; its
    /// return completes the job and its error fails the attempt. A timeout, a cancellation or the end
    /// of a shutdown's grace period cancels the task.
    ///
    /// ```swift
    /// worker.register(sendEmail) { email, context async throws in
    ///     try await mailer.send(to: email.to)
    /// }
    /// ```
    public func register<Payload>(
        _ kind: JobKind<Payload>, handler: @escaping @Sendable (Payload, JobContext) async throws -> Void
    ) {
        let scheduler = scheduler
        register(kind) { (payload: Payload, context: JobContext) -> Future<Void> in
            Future(on: scheduler) { try await handler(payload, context) }
        }
    }

    // MARK: Starting and stopping

    /// Starts claiming: at once, then whenever a job is enqueued in this process, a slot frees, or a
    /// due time or another worker's lease end comes.
    public func start() {
        let observation = store.observe { [weak self] notification in
            self?.storeDidNotify(notification)
        }
        let started = state.withLock { state in
            guard state.phase == .created else { return false }
            state.phase = .running
            state.storeObservation = observation
            return true
        }
        guard started else {
            observation.dispose()
            misuseFailure("JobWorker.start(): a worker starts once")
        }
        claimIfPossible()
        startSchedules()
    }

    /// Stops claiming, lets running attempts finish for up to `gracePeriod`, then cancels those still
    /// running and gives their jobs back to the store (available at once, the attempt not counted).
    /// The future completes once every attempt's end is recorded, and fails with
    /// `FutureError.aborted` if the worker is released before that.
    @discardableResult
    public func shutdown(gracePeriod: Duration) -> Future<Void> {
        Future<Void>(on: .none) { completion in
            self.stopSchedules()
            let (isIdle, timers) = self.state.withLock { state -> (Bool, [Disposable?]) in
                let timers = [state.wakeTimer, state.storeObservation]
                state.wakeTimer = nil
                state.storeObservation = nil
                switch state.phase {
                case .created, .stopped:
                    state.phase = .stopped
                    return (true, timers)
                case .draining:
                    misuseFailure("JobWorker.shutdown(gracePeriod:): the worker is already shutting down")
                case .running:
                    state.phase = .draining
                    state.drainCompletion = completion
                    return (false, timers)
                }
            }
            timers.forEach { $0?.dispose() }
            if isIdle {
                completion(.success(()))
                return NilDisposer()
            }
            let deadline = self.scheduler.async(after: gracePeriod.seconds) { [weak self] in
                self?.endGracePeriod()
            }
            self.state.withLock { $0.drainDeadline = deadline }
            self.finishDrainIfDone()
            return NilDisposer()
        }
    }

    /// Drops everything the worker holds in memory without writing to the store, as a crash would:
    /// running jobs stay running in the store until their leases end, their handlers are cancelled,
    /// and a shutdown under way fails with `FutureError.aborted` (its attempts' ends will never be
    /// recorded). For crash tests.
    package func simulateCrash() {
        let (running, disposables, drain) = state.withLock {
            state -> ([RunningAttempt], [Disposable?], (@Sendable (Result<Void>) -> Void)?) in
            state.phase = .stopped
            let running = Array(state.running.values)
            state.running = [:]
            state.runningByQueue = [:]
            let disposables = [state.wakeTimer, state.storeObservation, state.drainDeadline]
            let drain = state.drainCompletion
            state.wakeTimer = nil
            state.storeObservation = nil
            state.drainDeadline = nil
            state.drainCompletion = nil
            return (running, disposables, drain)
        }
        Self.abandon(running)
        disposables.forEach { $0?.dispose() }
        stopSchedules()
        drain?(.failure(FutureError.aborted))
    }

    /// Lets go of attempts whose ends will not be recorded (a crash, a worker released while they
    /// run): ends their spans, stops their timers, drops their completion effects and cancels their
    /// handlers' futures.
    private static func abandon(_ attempts: [RunningAttempt]) {
        for attempt in attempts {
            attempt.span?.end()
            attempt.timers.dispose()
            _ = attempt.context.takeCompletionEffects()
            attempt.observation?.cancel()
        }
    }

    /// How many attempts are running now.
    public var runningCount: Int { state.withLock { $0.running.count } }

    // MARK: Claiming

    private func storeDidNotify(_ notification: JobStoreNotification) {
        switch notification {
        case .enqueued(let queues):
            if !queues.isDisjoint(with: configuration.concurrencyByQueue.keys) { claimIfPossible() }
        case .cancellationRequested(let id):
            scheduler.async { [weak self] in self?.stop(id, reason: .cancellationRequested) }
        case .finished(let record):
            // A slot under a queue's global limit may have freed.
            if configuration.concurrencyByQueue[record.queue] != nil { claimIfPossible() }
        case .committedElsewhere:
            // Its claimable queues came as `enqueued` just before.
            break
        }
    }

    private func claimIfPossible() {
        let request = state.withLock { state -> ClaimRequest? in
            guard state.phase == .running else { return nil }
            guard !state.isClaiming else {
                state.needsAnotherClaim = true
                return nil
            }
            var slots: [String: Int] = [:]
            for (queue, limit) in configuration.concurrencyByQueue {
                slots[queue] = max(0, limit - state.runningByQueue[queue, default: 0])
            }
            guard slots.values.contains(where: { $0 > 0 }), !state.registrations.isEmpty else { return nil }
            state.isClaiming = true
            state.needsAnotherClaim = false
            return ClaimRequest(
                slotsByQueue: slots, names: Set(state.registrations.keys), worker: configuration.identity,
                leaseDuration: configuration.leaseDuration, maxLeaseExpiries: configuration.maxLeaseExpiries,
                measuresQueues: configuration.metrics != nil, lookahead: Self.claimLookahead)
        }
        guard let request else { return }
        let requestedAt = store.clock.now()
        store.claim(request).onResult(on: scheduler) { [weak self] result in
            self?.didClaim(result, requestedAt: requestedAt)
        }
    }

    private func didClaim(_ result: Result<ClaimResult>, requestedAt: Date) {
        let claim: ClaimResult
        switch result {
        case .success(let value):
            claim = value
        case .failure(let error):
            state.withLock { $0.isClaiming = false }
            emit(.storeFailed("claim: \(error)"))
            // A closed store answers nothing more; any other failure may pass, so try again later.
            if case JobStoreError.closed = error { return }
            armWakeTimer(at: store.clock.now().addingTimeInterval(1))
            return
        }
        let now = store.clock.now()
        if let metrics = configuration.metrics {
            metrics.claimAnswered(requestedAt: requestedAt, at: now)
            for record in claim.rescued { metrics.claimRescued(record) }
            for (queue, measurement) in claim.queues { metrics.queueMeasured(queue, measurement, at: now) }
        }
        for record in claim.rescued { logRescue(record) }
        // A job this worker still runs under an older fence came back: the claim found that attempt's
        // lease ended (its heartbeats or its claim's answer came too late) and rescued it. That
        // attempt lost its lease; it ends here, so that its handler's end cannot end the new one.
        let superseded = state.withLock { state in
            claim.jobs.compactMap { record in state.running[record.id].map(\.lease) }.filter { lease in
                claim.jobs.contains { $0.id == lease.id && $0.fence != lease.fence }
            }
        }
        for lease in superseded {
            emit(.leaseLost(lease))
            stop(lease.id, reason: .leaseLost)
        }
        let spans = claim.jobs.map(startSpan)
        let (started, toRelease, claimAgain) = state.withLock { state -> ([RunningAttempt], [JobLease], Bool) in
            state.isClaiming = false
            guard state.phase == .running else {
                return ([], claim.jobs.map { JobLease(id: $0.id, fence: $0.fence) }, false)
            }
            var started: [RunningAttempt] = []
            for (record, span) in zip(claim.jobs, spans) {
                let context = JobContext(
                    record: record, worker: configuration.identity, serviceContext: span?.context ?? .topLevel)
                let attempt = RunningAttempt(
                    record: record, context: context, startedAt: max(now, record.runAt), span: span)
                state.running[record.id] = attempt
                state.runningByQueue[record.queue, default: 0] += 1
                started.append(attempt)
            }
            return (started, [], state.needsAnotherClaim)
        }
        if !toRelease.isEmpty {
            for span in spans { span?.end() }
        }
        for lease in toRelease {
            release(lease)
        }
        if let wakeAt = claim.nextWakeAt {
            // Ahead by the lookahead, so that the claim has answered by the run time; a time already
            // within it (a lease's end, which no claim takes early) is woken at exactly.
            let ahead = wakeAt.addingTimeInterval(-Self.claimLookahead.seconds)
            armWakeTimer(at: ahead > now ? ahead : max(wakeAt, now))
        } else {
            // Nothing is pending for this worker: an earlier wake-up would only claim nothing.
            state.withLock { state in
                defer { state.wakeTimer = nil }
                return state.wakeTimer
            }?.dispose()
        }
        for attempt in started {
            let wait = attempt.record.runAt.timeIntervalSince(now)
            if wait > 0 {
                // Claimed ahead of its run time: a timer starts it then (disposed if it stops first).
                attempt.timers += scheduler.async(after: wait) { [weak self] in self?.run(attempt) }
            } else {
                run(attempt)
            }
        }
        if claimAgain { claimIfPossible() }
    }

    /// Arms the one wake-up timer for `time`, replacing the one armed before: the latest claim's
    /// answer says what is pending.
    private func armWakeTimer(at time: Date) {
        let delay = max(0.001, time.timeIntervalSince(store.clock.now()))
        let timer = scheduler.async(after: delay) { [weak self] in
            guard let self else { return }
            state.withLock { $0.wakeTimer = nil }
            claimIfPossible()
        }
        let replaced = state.withLock { state -> Disposable? in
            guard state.phase == .running else { return timer }
            defer { state.wakeTimer = timer }
            return state.wakeTimer
        }
        replaced?.dispose()
    }

    // MARK: Running attempts

    private func run(_ attempt: RunningAttempt) {
        let id = attempt.record.id
        emit(.attemptStarted(attempt.record))
        configuration.metrics?.attemptStarted(attempt.record, at: attempt.startedAt)
        guard let registration = state.withLock({ $0.registrations[attempt.record.name] }) else { return }
        let timers = attempt.timers
        timers += attempt.heartbeat
        // The enqueue's own limit, kept with the job, wins over the kind's.
        if let timeout = attempt.record.timeout ?? registration.timeout {
            timers += scheduler.async(after: timeout.seconds) { [weak self] in
                self?.stop(id, reason: .timedOut(timeout))
            }
        }
        armHeartbeat(for: attempt)
        let handlerFuture = ServiceContext.withValue(attempt.context.serviceContext) {
            registration.run(attempt.record, attempt.context)
        }
        let lease = attempt.lease
        let observation = handlerFuture.onResult(on: scheduler) { [weak self] result in
            self?.attemptEnded(lease, result: result)
        }
        let isStillRunning = state.withLock { state in
            guard state.running[id]?.lease == lease else { return false }
            state.running[id]?.observation = observation
            return true
        }
        // Stopped before the handler returned its future (a cancellation or a crash meanwhile).
        if !isStillRunning { observation.cancel() }
    }

    /// The span of an attempt at `record`, when the worker traces: a trace of its own, linked to the
    /// enqueue's span and, for a retry, to the first attempt's.
    private func startSpan(_ record: JobRecord) -> (any Span)? {
        guard let tracer = configuration.tracer else { return nil }
        let span = tracer.startSpan(record.name, context: .topLevel, ofKind: .consumer)
        for headers in [record.traceContext, record.attempt > 1 ? record.firstAttemptTraceContext : [:]]
        where !headers.isEmpty {
            var linked = ServiceContext.topLevel
            tracer.extract(headers, into: &linked, using: TraceHeaders())
            span.addLink(SpanLink(context: linked, attributes: [:]))
        }
        span.attributes["job.id"] = Int(record.id.rawValue)
        span.attributes["job.name"] = record.name
        span.attributes["job.queue"] = record.queue
        span.attributes["job.attempt"] = record.attempt
        span.attributes["job.worker"] = configuration.identity
        return span
    }

    /// Ends an attempt's span, with the error that ended the attempt, if any.
    private func endSpan(of attempt: RunningAttempt, error: (any Error)?) {
        guard let span = attempt.span else { return }
        if let error {
            span.recordError(error)
            span.setStatus(SpanStatus(code: .error, message: "\(error)"))
        }
        span.end()
    }

    private func armHeartbeat(for attempt: RunningAttempt) {
        let interval = configuration.heartbeatInterval ?? configuration.leaseDuration / 3
        let id = attempt.record.id
        attempt.heartbeat.replace(with: scheduler.async(after: interval.seconds) { [weak self] in
            self?.heartbeat(id)
        })
    }

    private func heartbeat(_ id: JobID) {
        guard let attempt = state.withLock({ $0.running[id] }) else { return }
        store.heartbeat(attempt.lease, leaseDuration: configuration.leaseDuration).onResult(on: scheduler) {
            [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let answer):
                if answer.isCancellationRequested {
                    stop(id, reason: .cancellationRequested)
                } else if let current = state.withLock({ $0.running[id] }), current.lease == attempt.lease {
                    armHeartbeat(for: current)
                }
            case .failure(JobStoreError.leaseLost) where attempt.context.isCompletionWrittenByHandler:
                // The handler's own transaction may have completed the job: the attempt's end reads
                // the job and tells. No later heartbeat is needed either way.
                break
            case .failure(JobStoreError.leaseLost(let lease)):
                // Unless that attempt has ended already (a claim of the job under a newer fence).
                guard state.withLock({ $0.running[id]?.lease == attempt.lease }) else { return }
                emit(.leaseLost(lease))
                stop(id, reason: .leaseLost)
            case .failure(let error):
                emit(.storeFailed("heartbeat of \(id): \(error)"))
                if let current = state.withLock({ $0.running[id] }) { armHeartbeat(for: current) }
            }
        }
    }

    /// Takes the attempt out of the running set and frees its slot: the one under `lease`'s fence
    /// when given.
    private func takeRunning(_ id: JobID, lease: JobLease? = nil) -> RunningAttempt? {
        state.withLock { state in
            guard lease == nil || state.running[id]?.lease == lease,
                let attempt = state.running.removeValue(forKey: id)
            else { return nil }
            state.runningByQueue[attempt.record.queue, default: 1] -= 1
            state.pendingWrites += 1
            return attempt
        }
    }

    private func attemptEnded(_ lease: JobLease, result: Result<Void>) {
        guard let attempt = takeRunning(lease.id, lease: lease) else { return }
        attempt.timers.dispose()
        let effects = attempt.context.takeCompletionEffects()
        configuration.metrics?.handlerEnded(attempt.record, startedAt: attempt.startedAt, at: store.clock.now())
        switch result {
        case .success: endSpan(of: attempt, error: nil)
        case .failure(let error): endSpan(of: attempt, error: error)
        }
        let registration = state.withLock { $0.registrations[attempt.record.name] }
        switch result {
        case .success:
            finish(attempt, outcome: .completed, effects: effects)
        case .failure(let error as JobPayloadDecodingError):
            finish(attempt, outcome: .discarded(error: error.description), effects: nil)
        case .failure(let error):
            finish(attempt, outcome: failure(error, of: attempt, backoff: registration?.backoff), effects: nil)
        }
        claimIfPossible()
    }

    private func failure(_ error: any Error, of attempt: RunningAttempt, backoff: Backoff?) -> JobOutcome {
        let delay = backoff?.delay(forAttempt: max(1, attempt.record.attempt)) ?? 1
        return .failed(error: "\(error)", retryAt: store.clock.now().addingTimeInterval(delay))
    }

    private func stop(_ id: JobID, reason: StopReason) {
        guard let attempt = takeRunning(id) else { return }
        attempt.timers.dispose()
        _ = attempt.context.takeCompletionEffects()
        attempt.observation?.cancel()
        configuration.metrics?.handlerEnded(attempt.record, startedAt: attempt.startedAt, at: store.clock.now())
        switch reason {
        case .timedOut(let timeout): endSpan(of: attempt, error: TimeoutError(delay: timeout.seconds))
        case .cancellationRequested: endSpan(of: attempt, error: CancellationError())
        case .leaseLost: endSpan(of: attempt, error: JobStoreError.leaseLost(attempt.lease))
        case .shutdown: endSpan(of: attempt, error: nil)
        }
        switch reason {
        case .timedOut(let timeout):
            let backoff = state.withLock { $0.registrations[attempt.record.name]?.backoff }
            let error = TimeoutError(delay: timeout.seconds)
            finish(attempt, outcome: failure(error, of: attempt, backoff: backoff), effects: nil)
        case .cancellationRequested:
            finish(attempt, outcome: .cancelled, effects: nil)
        case .leaseLost:
            writeSettled()
        case .shutdown:
            release(attempt.lease, counted: true)
        }
        claimIfPossible()
    }

    private func finish(
        _ attempt: RunningAttempt, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) {
        if case .failed = outcome, attempt.record.attempt == 1, let span = attempt.span,
            let tracer = configuration.tracer
        {
            // Submitted before the finish, to the same writer: the retry's claim reads it.
            var headers: [String: String] = [:]
            tracer.inject(span.context, into: &headers, using: TraceHeaders())
            if !headers.isEmpty { store.recordFirstAttemptTrace(attempt.lease, traceContext: headers) }
        }
        if attempt.context.isCompletionWrittenByHandler {
            // The handler's transaction completed the job when it holds this attempt's fence as
            // completed: that is the attempt's end, and there is nothing to write.
            store.job(attempt.record.id).onResult(on: scheduler) { [weak self] result in
                guard let self else { return }
                if case .success(let record?) = result, record.state == .completed,
                    record.fence == attempt.record.fence
                {
                    emit(.attemptFinished(record))
                    writeSettled()
                } else {
                    write(attempt, outcome: outcome, effects: effects)
                }
            }
        } else {
            write(attempt, outcome: outcome, effects: effects)
        }
    }

    /// Records the attempt's end in the store; see ``finish(_:outcome:effects:)``.
    private func write(
        _ attempt: RunningAttempt, outcome: JobOutcome, effects: (@Sendable (any JobTransaction) throws -> Void)?
    ) {
        store.finish(attempt.lease, outcome: outcome, effects: effects).onResult(on: scheduler) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let record):
                emit(.attemptFinished(record))
                writeSettled()
            case .failure(JobStoreError.leaseLost(let lease)):
                emit(.leaseLost(lease))
                writeSettled()
            case .failure(let error) where effects != nil:
                // The effects threw or could not commit: the attempt failed, and nothing of it committed.
                let backoff = state.withLock { $0.registrations[attempt.record.name]?.backoff }
                finish(attempt, outcome: failure(error, of: attempt, backoff: backoff), effects: nil)
            case .failure(let error):
                emit(.storeFailed("finishing \(attempt.record.id): \(error)"))
                writeSettled()
            }
        }
    }

    private func release(_ lease: JobLease, counted: Bool = false) {
        if !counted { state.withLock { $0.pendingWrites += 1 } }
        store.release(lease).onResult(on: scheduler) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success: emit(.released(lease))
            case .failure(JobStoreError.leaseLost(let lease)): emit(.leaseLost(lease))
            case .failure(let error): emit(.storeFailed("releasing \(lease.id): \(error)"))
            }
            writeSettled()
        }
    }

    // MARK: Reporting

    private func emit(_ event: JobWorkerEvent) {
        configuration.onEvent?(event)
        if let metrics = configuration.metrics {
            switch event {
            case .attemptFinished(let record): metrics.attemptRecorded(record)
            case .leaseLost: metrics.leaseLost()
            case .released: metrics.released()
            case .attemptStarted, .storeFailed: break
            }
        }
        guard let logger = configuration.logger else { return }
        func metadata(_ record: JobRecord) -> Logger.Metadata {
            [
                "job.id": "\(record.id.rawValue)", "job.name": "\(record.name)", "job.queue": "\(record.queue)",
                "job.attempt": "\(record.attempt)", "job.worker": "\(configuration.identity)",
            ]
        }
        switch event {
        case .attemptStarted(let record):
            logger.debug("job attempt started", metadata: metadata(record))
        case .attemptFinished(let record):
            var details = metadata(record)
            details["job.state"] = "\(record.state.rawValue)"
            if let error = record.lastError, record.state != .completed { details["job.error"] = "\(error)" }
            switch record.state {
            case .completed, .cancelled: logger.info("job attempt ended", metadata: details)
            case .retryable: logger.warning("job attempt failed; retrying", metadata: details)
            default: logger.error("job attempt failed; giving up", metadata: details)
            }
        case .leaseLost(let lease):
            logger.warning("job lease lost; letting the job go", metadata: ["job.id": "\(lease.id.rawValue)"])
        case .released(let lease):
            logger.info("job given back at shutdown", metadata: ["job.id": "\(lease.id.rawValue)"])
        case .storeFailed(let message):
            logger.error("job store operation failed", metadata: ["error": "\(message)"])
        }
    }

    /// A rescued job's line: a warning, or an error when it was quarantined as poison.
    private func logRescue(_ record: JobRecord) {
        guard let logger = configuration.logger else { return }
        let details: Logger.Metadata = [
            "job.id": "\(record.id.rawValue)", "job.name": "\(record.name)", "job.queue": "\(record.queue)",
            "job.attempt": "\(record.attempt)", "job.state": "\(record.state.rawValue)",
            "job.last_worker": "\(record.worker ?? "")", "job.worker": "\(configuration.identity)",
        ]
        if record.state == .quarantined {
            logger.error("job quarantined: its leases kept expiring with no error recorded", metadata: details)
        } else {
            logger.warning("job lease expired; the job was rescued", metadata: details)
        }
    }

    // MARK: Draining

    private func writeSettled() {
        state.withLock { $0.pendingWrites -= 1 }
        finishDrainIfDone()
    }

    private func endGracePeriod() {
        let ids = state.withLock { state -> [JobID] in
            guard state.phase == .draining else { return [] }
            state.drainDeadline = nil
            return Array(state.running.keys)
        }
        for id in ids.sorted() { stop(id, reason: .shutdown) }
    }

    private func finishDrainIfDone() {
        let (completion, deadline) = state.withLock {
            state -> ((@Sendable (Result<Void>) -> Void)?, Disposable?) in
            guard state.phase == .draining, state.running.isEmpty, state.pendingWrites == 0 else { return (nil, nil) }
            state.phase = .stopped
            defer {
                state.drainCompletion = nil
                state.drainDeadline = nil
            }
            return (state.drainCompletion, state.drainDeadline)
        }
        deadline?.dispose()
        completion?(.success(()))
    }
}

/// One timer at a time: arming a new one disposes the previous; once disposed, it disposes whatever
/// it is given.
final class ReplaceableTimer: Disposable {
    private let state = Locked<(current: Disposable?, isDisposed: Bool)>((nil, false))

    func replace(with timer: Disposable) {
        let (previous, isDisposed) = state.withLock { state -> (Disposable?, Bool) in
            guard !state.isDisposed else { return (nil, true) }
            defer { state.current = timer }
            return (state.current, false)
        }
        previous?.dispose()
        if isDisposed { timer.dispose() }
    }

    func dispose() {
        let current = state.withLock { state -> Disposable? in
            state.isDisposed = true
            defer { state.current = nil }
            return state.current
        }
        current?.dispose()
    }
}
