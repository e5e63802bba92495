import CoreMetrics
import Foundation

/// A worker's attempts through swift-metrics. Off unless given to
/// ``JobWorker/Configuration/metrics``.
///
/// ```swift
/// let configuration = JobWorker.Configuration(metrics: JobMetrics(dimensions: [("service", "mailer")]))
/// ```
///
/// The metrics, each with the dimensions you give and those in the table:
///
/// | label | kind | dimensions | what |
/// |---|---|---|---|
/// | `<label>_attempts` | `Counter` | `queue`, `name`, `state` | attempts ended, by the state they left the job in (`completed`, `retryable`, `discarded`, `cancelled`) |
/// | `<label>_run_time` | `Timer` | `queue`, `name` | from an attempt's start to its handler's end (or its timeout or cancellation), in nanoseconds |
/// | `<label>_lag` | `Timer` | `queue` | from a job's run time to its attempt's start: how late jobs start |
/// | `<label>_claim_latency` | `Timer` | | from a claim's request to its answer |
/// | `<label>_leases_lost` | `Counter` | | attempts whose lease was lost, whose end the worker could not record |
/// | `<label>_released` | `Counter` | | jobs given back at a shutdown |
/// | `<label>_queue_depth` | `Gauge` | `queue` | jobs due and waiting in the queue, after each claim of the worker |
/// | `<label>_queue_lag` | `Gauge` | `queue` | how long the longest-waiting due job of the queue has waited, in seconds, after each claim (0 when none) |
/// | `<label>_lease_expiries` | `Counter` | `queue`, `name` | attempts whose lease expired with no end recorded (a dead or stalled worker), counted by the claim that rescued the job |
/// | `<label>_quarantined` | `Counter` | `queue`, `name` | jobs quarantined as poison after too many lease expiries |
///
/// Times are read from the store's ``JobClock``.
public struct JobMetrics: Sendable {
    /// The prefix of the metrics' labels.
    public let label: String
    /// Dimensions added to every metric.
    public let dimensions: [(String, String)]
    private let factory: any MetricsFactory

    /// Describes the metrics to report.
    ///
    /// - Parameters:
    ///   - label: the prefix of the labels; `flow_jobs` by default.
    ///   - dimensions: dimensions added to every metric.
    ///   - factory: the metrics backend; the one `MetricsSystem.bootstrap` installed by default.
    public init(
        label: String = "flow_jobs", dimensions: [(String, String)] = [],
        factory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.label = label
        self.dimensions = dimensions
        self.factory = factory
    }

    func attemptStarted(_ record: JobRecord, at start: Date) {
        CoreMetrics.Timer(label: label + "_lag", dimensions: dimensions + [("queue", record.queue)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(from: record.runAt, to: start))
    }

    func handlerEnded(_ record: JobRecord, startedAt start: Date, at end: Date) {
        CoreMetrics.Timer(
            label: label + "_run_time", dimensions: dimensions + [("queue", record.queue), ("name", record.name)],
            factory: factory
        ).recordNanoseconds(Self.nanoseconds(from: start, to: end))
    }

    func attemptRecorded(_ record: JobRecord) {
        Counter(
            label: label + "_attempts",
            dimensions: dimensions + [("queue", record.queue), ("name", record.name), ("state", record.state.rawValue)],
            factory: factory
        ).increment()
    }

    func claimAnswered(requestedAt start: Date, at end: Date) {
        CoreMetrics.Timer(label: label + "_claim_latency", dimensions: dimensions, factory: factory)
            .recordNanoseconds(Self.nanoseconds(from: start, to: end))
    }

    func leaseLost() {
        Counter(label: label + "_leases_lost", dimensions: dimensions, factory: factory).increment()
    }

    func released() {
        Counter(label: label + "_released", dimensions: dimensions, factory: factory).increment()
    }

    func claimRescued(_ record: JobRecord) {
        let labels = dimensions + [("queue", record.queue), ("name", record.name)]
        Counter(label: label + "_lease_expiries", dimensions: labels, factory: factory).increment()
        if record.state == .quarantined {
            Counter(label: label + "_quarantined", dimensions: labels, factory: factory).increment()
        }
    }

    func queueMeasured(_ queue: String, _ measurement: QueueMeasurement, at now: Date) {
        let labels = dimensions + [("queue", queue)]
        Gauge(label: label + "_queue_depth", dimensions: labels, factory: factory).record(measurement.dueCount)
        let waited = measurement.oldestDueAt.map { max(0, now.timeIntervalSince($0)) } ?? 0
        Gauge(label: label + "_queue_lag", dimensions: labels, factory: factory).record(waited)
    }

    private static func nanoseconds(from start: Date, to end: Date) -> Int64 {
        Int64((max(0, end.timeIntervalSince(start)) * 1e9).rounded())
    }
}
