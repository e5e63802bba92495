import Dispatch
import Flow
import ServiceLifecycle

/// Flow event loops as a swift-service-lifecycle `Service`: they run until the `ServiceGroup` shuts
/// down, then they are stopped and closed.
///
/// Give it the loops your other services use, so that they close only once everything running on them
/// has stopped: a `ServiceGroup` shuts its services down in reverse order, so list this service first.
///
/// ```swift
/// let loops = (0..<2).map { EventLoop.startOnNewThread(name: "worker-\($0)") }
/// let group = ServiceGroup(
///     services: [EventLoopService(loops: loops), myServiceUsing(loops)],
///     gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
public struct EventLoopService: Service {
    /// The loops this service closes when it stops.
    public let loops: [Flow.EventLoop]

    /// A service owning `loops`, which must have been started with
    /// `EventLoop.startOnNewThread(name:)`.
    public init(loops: [Flow.EventLoop]) {
        self.loops = loops
    }

    /// A service owning `count` new loops, each on its own thread, named `name-0`, `name-1`, ...
    public init(count: Int, name: String = "flow.loop") {
        misusePrecondition(count > 0, "EventLoopService(count:): give at least one loop, not \(count)")
        self.init(loops: (0..<count).map { Flow.EventLoop.startOnNewThread(name: "\(name)-\($0)") })
    }

    /// Waits for graceful shutdown (or cancellation), then stops and closes the loops, letting each
    /// finish the work already sent to it.
    public func run() async throws {
        try? await gracefulShutdown()
        await shutDown(loops)
    }
}

/// Stops and closes `loops` on a Dispatch thread rather than the caller's task: `EventLoop.shutdown()`
/// blocks until each loop's thread has finished.
func shutDown(_ loops: [Flow.EventLoop]) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            for loop in loops where !loop.isClosed { loop.shutdown() }
            continuation.resume()
        }
    }
}
