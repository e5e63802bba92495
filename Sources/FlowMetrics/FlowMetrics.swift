import CoreMetrics
import Flow

/// Reports an event loop's health through swift-metrics: how late its timers fire (lag), whether
/// work is waiting, how many libuv handles it holds, and, for a `LiveFutureCount` you pass,
/// how many futures are alive. Off by default: nothing is sampled, and nothing is added to the
/// loop's paths, until ``start(for:every:label:dimensions:liveFutures:factory:)`` is called.
///
/// ```swift
/// import FlowMetrics
/// import Metrics
///
/// MetricsSystem.bootstrap(myPrometheusFactory)
/// let sampling = FlowMetrics.start(for: loop, every: 1)
/// // ... on shutdown:
/// sampling.dispose()
/// ```
///
/// The metrics, each with the dimension `("loop", loop.name)` and those you add:
///
/// | label | kind | what |
/// |---|---|---|
/// | `<label>_lag` | `Timer` | how late each sampling timer fired, in nanoseconds: a blocked loop shows here |
/// | `<label>_queued_work` | `Gauge` | 1 if posted work was waiting when the sample was taken, else 0 |
/// | `<label>_open_handles` | `Gauge` | libuv handles the loop holds (`EventLoop.openHandleCount`) |
/// | `<label>_live_futures` | `Gauge` | `LiveFutureCount.value` of the counter passed, if any (debug builds count) |
public enum FlowMetrics {
    /// Starts sampling `loop` every `interval` seconds on the loop itself, until the returned
    /// disposable is disposed. Callable from any thread.
    ///
    /// The sampling timer keeps the loop's `run()` going while it is on: dispose of it before
    /// expecting the loop to finish on its own.
    ///
    /// - Parameters:
    ///   - loop: the loop to watch.
    ///   - interval: seconds between samples (and the timer whose lateness is the lag): a finite number
    ///     of seconds, at most a year; less than a millisecond counts as one. An interval that is not
    ///     finite, or longer than a year, stops the program with a message.
    ///   - label: the prefix of the metrics' labels.
    ///   - dimensions: dimensions added to `("loop", loop.name)`.
    ///   - liveFutures: a counter whose value to report as `<label>_live_futures`.
    ///   - factory: the metrics backend; the one `MetricsSystem.bootstrap` installed by default.
    /// - Returns: a disposable that stops the sampling.
    public static func start(
        for loop: EventLoop, every interval: Double = 1, label: String = "flow_loop",
        dimensions: [(String, String)] = [], liveFutures: LiveFutureCount? = nil,
        factory: MetricsFactory = MetricsSystem.factory
    ) -> Disposable {
        misusePrecondition(
            interval.isFinite && interval <= maximumInterval,
            "FlowMetrics.start(every:): the interval must be a finite number of seconds, at most a year (\(Int(maximumInterval))), not \(interval)")
        let dimensions = [("loop", loop.name)] + dimensions
        let sampler = LoopSampler(
            loop: loop,
            intervalNanoseconds: UInt64(max(interval, 0.001) * 1e9),
            lag: CoreMetrics.Timer(label: label + "_lag", dimensions: dimensions, factory: factory),
            queuedWork: Gauge(label: label + "_queued_work", dimensions: dimensions, factory: factory),
            openHandles: Gauge(label: label + "_open_handles", dimensions: dimensions, factory: factory),
            liveFutures: liveFutures.map {
                ($0, Gauge(label: label + "_live_futures", dimensions: dimensions, factory: factory))
            }
        )
        if loop.isInLoopContext {
            sampler.scheduleNext()
        } else {
            loop.execute { sampler.scheduleNext() }
        }
        return Disposer { sampler.stop() }
    }

    /// The longest interval between samples, in seconds: a year, far within what a deadline in
    /// nanoseconds can hold.
    static let maximumInterval: Double = 365 * 24 * 3600
}

/// One loop's sampling: a chain of one-shot timers on the loop, each measuring its own lateness.
final class LoopSampler: Sendable {
    let loop: EventLoop
    let intervalNanoseconds: UInt64
    let lag: CoreMetrics.Timer
    let queuedWork: Gauge
    let openHandles: Gauge
    let liveFutures: (LiveFutureCount, Gauge)?
    /// The pending timer, and whether sampling was stopped; guarded by the lock.
    private let state = Locked<(timer: Disposable?, isStopped: Bool)>((nil, false))

    init(
        loop: EventLoop, intervalNanoseconds: UInt64, lag: CoreMetrics.Timer, queuedWork: Gauge,
        openHandles: Gauge, liveFutures: (LiveFutureCount, Gauge)?
    ) {
        self.loop = loop
        self.intervalNanoseconds = intervalNanoseconds
        self.lag = lag
        self.queuedWork = queuedWork
        self.openHandles = openHandles
        self.liveFutures = liveFutures
    }

    /// Arms the next sample. Loop context.
    func scheduleNext() {
        let deadline = EventLoop.uptimeNanoseconds + intervalNanoseconds
        let timer = loop.execute(atUptimeNanoseconds: deadline) { [self] in
            sample(due: deadline)
        }
        let isStopped = state.withLock { state -> Bool in
            if !state.isStopped { state.timer = timer }
            return state.isStopped
        }
        if isStopped { timer.dispose() }
    }

    private func sample(due deadline: UInt64) {
        let now = EventLoop.uptimeNanoseconds
        lag.recordNanoseconds(Int64(now > deadline ? now - deadline : 0))
        queuedWork.record(loop.queuedWorkCount)
        openHandles.record(loop.openHandleCount)
        if let (count, gauge) = liveFutures { gauge.record(count.value) }
        if !state.withLock({ $0.isStopped }) { scheduleNext() }
    }

    func stop() {
        let timer = state.withLock { state -> Disposable? in
            state.isStopped = true
            defer { state.timer = nil }
            return state.timer
        }
        timer?.dispose()
    }
}
