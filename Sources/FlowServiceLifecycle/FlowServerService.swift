import Dispatch
import Flow
import ServiceLifecycle

/// A server running on Flow loops as a swift-service-lifecycle `Service`.
///
/// `run()` starts the server and serves until graceful shutdown; then it stops accepting, lets the
/// work in progress finish for up to ``shutdownDeadline``, forces what is left closed, and closes the
/// loops. If the task is cancelled instead, it skips the wait.
///
/// ```swift
/// let server = FlowServerService(loopCount: 2) { loops in
///     let work = InFlightWork()
///     let listeners = try TCPListenerGroup.listen(port: 8080, loops: loops) { connection in
///         let token = work.begin()
///         serve(connection).always { token.dispose() }
///     }
///     return FlowServerService.Running(
///         stopAccepting: { listeners.close() },
///         finishWork: { work.whenIdle() },
///         forceClose: { closeAllConnections() })
/// }
/// try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm], logger: logger).run()
/// ```
public struct FlowServerService: Service {
    /// What a started server tells the service about stopping it.
    public struct Running: Sendable {
        /// Stops accepting new work (closes the listeners); the future completes once it has.
        public var stopAccepting: @Sendable () -> Flow.Future<Void>
        /// A future that completes once the work in progress has finished (see ``InFlightWork``).
        public var finishWork: @Sendable () -> Flow.Future<Void>
        /// Ends the work still in progress once the deadline has passed (closes the connections).
        public var forceClose: @Sendable () -> Void

        /// Describes how to stop a started server.
        ///
        /// - Parameters:
        ///   - stopAccepting: stops accepting new work; the future completes once it has.
        ///   - finishWork: a future that completes once the work in progress has finished.
        ///   - forceClose: ends the work still in progress after the deadline.
        @preconcurrency
        public init(
            stopAccepting: @escaping @Sendable () -> Flow.Future<Void>,
            finishWork: @escaping @Sendable () -> Flow.Future<Void> = { Flow.Future() },
            forceClose: @escaping @Sendable () -> Void = {}
        ) {
            self.stopAccepting = stopAccepting
            self.finishWork = finishWork
            self.forceClose = forceClose
        }
    }

    /// The loops the server runs on; the service closes them when it stops.
    public let loops: [Flow.EventLoop]
    /// How long the work in progress may take to finish after graceful shutdown began.
    public let shutdownDeadline: Duration
    private let start: @Sendable ([Flow.EventLoop]) throws -> Running

    /// A service running a server on `loops`, which it owns (started with
    /// `EventLoop.startOnNewThread(name:)`).
    ///
    /// - Parameters:
    ///   - loops: the loops to serve on.
    ///   - shutdownDeadline: how long work in progress may take to finish once shutdown began.
    ///   - start: starts the server on the loops (called from the service's task, off the loops) and
    ///     says how to stop it.
    @preconcurrency
    public init(
        loops: [Flow.EventLoop], shutdownDeadline: Duration = .seconds(10),
        start: @escaping @Sendable ([Flow.EventLoop]) throws -> Running
    ) {
        misusePrecondition(!loops.isEmpty, "FlowServerService: give at least one loop")
        self.loops = loops
        self.shutdownDeadline = shutdownDeadline
        self.start = start
    }

    /// A service running a server on `loopCount` new loops named `name-0`, `name-1`, ...
    @preconcurrency
    public init(
        loopCount: Int, name: String = "flow.server", shutdownDeadline: Duration = .seconds(10),
        start: @escaping @Sendable ([Flow.EventLoop]) throws -> Running
    ) {
        misusePrecondition(loopCount > 0, "FlowServerService(loopCount:): give at least one loop, not \(loopCount)")
        self.init(
            loops: (0..<loopCount).map { Flow.EventLoop.startOnNewThread(name: "\(name)-\($0)") },
            shutdownDeadline: shutdownDeadline, start: start)
    }

    /// Starts the server and serves until graceful shutdown or cancellation, then stops it as
    /// described above and closes the loops.
    ///
    /// - Throws: what `start` threw (the loops are closed first).
    public func run() async throws {
        let running: Running
        do {
            running = try start(loops)
        } catch {
            await shutDown(loops)
            throw error
        }
        let isGraceful = (try? await gracefulShutdown()) != nil
        _ = try? await running.stopAccepting().get()
        let hasFinished = isGraceful ? await finishes(running.finishWork(), within: shutdownDeadline) : false
        if !hasFinished { running.forceClose() }
        await shutDown(loops)
    }
}

/// Whether `work` completes (with any result) before `deadline` has passed. Not cancelled by the
/// caller's cancellation: shutting down must go on.
func finishes(_ work: Flow.Future<Void>, within deadline: Duration) async -> Bool {
    await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let decision = Locked<CheckedContinuation<Bool, Never>?>(continuation)
        let decide: @Sendable (Bool) -> Void = { finished in
            decision.withLock { pending -> CheckedContinuation<Bool, Never>? in
                defer { pending = nil }
                return pending
            }?.resume(returning: finished)
        }
        let (seconds, attoseconds) = deadline.components
        let (whole, isTooLong) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (nanoseconds, isStillTooLong) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        // A deadline beyond what nanoseconds count (292 years) is never reached: no timer then.
        if !isTooLong, !isStillTooLong {
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { decide(false) }
        }
        work.onResult(on: .none) { _ in decide(true) }
    }
}
