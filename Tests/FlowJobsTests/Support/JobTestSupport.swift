import Flow
import FlowJobs
import FlowTesting
import Foundation
import Logging
import Synchronization

/// A wall clock the test sets: starts at a fixed date, moves when told, and can step backwards.
final class ManualWallClock: Sendable {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    private let offset = Synchronization.Mutex(0.0)

    var jobClock: JobClock { JobClock { [self] in Self.start.addingTimeInterval(offset.withLock { $0 }) } }

    func advance(by seconds: Double) { offset.withLock { $0 += seconds } }
}

/// A temporary directory, removed when the value goes.
final class TemporaryDirectory: Sendable {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("flow-jobs-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    deinit { try? FileManager.default.removeItem(at: url) }
}

/// FlowTesting's virtual clock, and a job clock that follows it (plus a step the test can set, to play
/// a wall clock that jumps), and stores that run on the calling thread, so that every store future
/// is complete when the call returns and the test only moves time.
final class VirtualJobs: Sendable {
    let clock = VirtualTimeScheduler()
    let directory = TemporaryDirectory()
    private let wallClockStep = Synchronization.Mutex(0.0)

    var scheduler: Scheduler { clock.scheduler }

    var jobClock: JobClock {
        JobClock { [self] in
            let elapsed = clock.now.components
            let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
            return ManualWallClock.start.addingTimeInterval(seconds + wallClockStep.withLock { $0 })
        }
    }

    /// Moves the wall clock (not the virtual clock) by `seconds`; negative steps it backwards.
    func stepWallClock(by seconds: Double) { wallClockStep.withLock { $0 += seconds } }

    var path: String { directory.path("jobs.sqlite") }

    func openStore() throws -> SQLiteJobStore {
        try SQLiteJobStore(path: path, configuration: .init(clock: jobClock, execution: .callingThread))
    }

    /// Moves time in steps of `step` up to `total`, running what falls due.
    func advance(by total: Duration, step: Duration = .seconds(1)) {
        var left = total
        while left > .zero {
            let move = min(step, left)
            clock.advance(by: move)
            left -= move
        }
    }

    /// Seconds of virtual time since the start.
    var elapsedSeconds: Double {
        let elapsed = clock.now.components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }
}

/// The value of a future that is already complete (stores on the calling thread complete at once).
@discardableResult
func completed<Value>(_ future: Future<Value>, function: String = #function) throws -> Value {
    let result = Synchronization.Mutex<Result<Value>?>(nil)
    future.onResult(on: .none) { outcome in result.withLock { $0 = outcome } }
    guard let value = result.withLock({ $0 }) else { throw NotCompleted(function: function) }
    return try value.get()
}

struct NotCompleted: Error {
    let function: String
}

/// Events a worker reported, in order.
final class EventLog: Sendable {
    private let events = Synchronization.Mutex<[JobWorkerEvent]>([])

    var onEvent: @Sendable (JobWorkerEvent) -> Void { { [self] event in events.withLock { $0.append(event) } } }

    var all: [JobWorkerEvent] { events.withLock { $0 } }

    var started: [JobRecord] {
        all.compactMap { if case .attemptStarted(let record) = $0 { record } else { nil } }
    }

    var finished: [JobRecord] {
        all.compactMap { if case .attemptFinished(let record) = $0 { record } else { nil } }
    }

    var leasesLost: [JobLease] {
        all.compactMap { if case .leaseLost(let lease) = $0 { lease } else { nil } }
    }

    var released: [JobLease] {
        all.compactMap { if case .released(let lease) = $0 { lease } else { nil } }
    }
}

struct Message: Codable, Sendable, Hashable {
    var text: String
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String { "the handler failed on purpose" }
}

/// Handlers' futures that complete when the test says, and report when they were cancelled.
///
/// A cancelled future's completion is let go, as a well-behaved operation does: a future still
/// waiting here holds this object (its operation does), so one neither completed nor cancelled by
/// the end of a test is a cycle LeakSanitizer reports.
final class PendingWork: Sendable {
    private struct Waiting {
        var completions: [(key: Int, complete: @Sendable (Result<Void>) -> Void)] = []
        var nextKey = 0
    }

    private let waiting = Synchronization.Mutex(Waiting())
    private let disposals = Synchronization.Mutex(0)

    var disposedCount: Int { disposals.withLock { $0 } }
    var waitingCount: Int { waiting.withLock { $0.completions.count } }

    func future() -> Future<Void> {
        Future<Void>(on: .none) { [self] completion in
            let key = waiting.withLock { waiting in
                defer { waiting.nextKey += 1 }
                waiting.completions.append((waiting.nextKey, completion))
                return waiting.nextKey
            }
            return Disposer { [self] in
                disposals.withLock { $0 += 1 }
                waiting.withLock { $0.completions.removeAll { $0.key == key } }
            }
        }
    }

    /// Completes the oldest future still waiting with `result`.
    func completeFirst(_ result: Result<Void> = .success(())) {
        let first = waiting.withLock { $0.completions.isEmpty ? nil : $0.completions.removeFirst() }
        first?.complete(result)
    }

    /// Completes every future still waiting with `result`.
    func completeAll(_ result: Result<Void> = .success(())) {
        let all = waiting.withLock { waiting in
            defer { waiting.completions.removeAll() }
            return waiting.completions
        }
        for entry in all { entry.complete(result) }
    }
}

/// A swift-log handler that keeps each line's level, message and metadata.
struct CapturingLogHandler: LogHandler {
    struct Line: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    final class Lines: Sendable {
        private let lines = Synchronization.Mutex<[Line]>([])
        var all: [Line] { lines.withLock { $0 } }
        func append(_ line: Line) { lines.withLock { $0.append(line) } }
    }

    let lines: Lines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.append(Line(level: event.level, message: "\(event.message)", metadata: event.metadata ?? [:]))
    }
}
