import Dispatch
import Flow
import FlowLogging
import Logging
import Synchronization
import Testing

/// A log record as a test handler received it.
struct Record: Sendable {
    var level: Logger.Level
    var message: String
    var metadata: [String: String]
    var source: String
}

/// A swift-log handler that keeps what it receives, and lets a test wait for a record it expects.
final class RecordingLogHandler: LogHandler, @unchecked Sendable {
    // @unchecked Sendable: `records` and `waiters` are guarded by `storage`'s lock; `metadata` and
    // `logLevel` are set before the logger is shared, as swift-log's own handlers assume.
    private struct Storage {
        var records: [Record] = []
        var waiters: [(condition: @Sendable (Record) -> Bool, semaphore: DispatchSemaphore)] = []
    }

    private let storage = Locked(Storage())
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let record = Record(
            level: event.level, message: "\(event.message)",
            metadata: (event.metadata ?? [:]).mapValues { "\($0)" }, source: event.source)
        storage.withLock { storage in
            storage.records.append(record)
            for waiter in storage.waiters where waiter.condition(record) { waiter.semaphore.signal() }
        }
    }

    var records: [Record] { storage.withLock { $0.records } }

    /// Waits until a record matching `condition` arrives (or has arrived); false after 30 s.
    func waitForRecord(where condition: @escaping @Sendable (Record) -> Bool) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        storage.withLock { storage in
            if storage.records.contains(where: condition) { semaphore.signal() }
            storage.waiters.append((condition, semaphore))
        }
        return semaphore.wait(timeout: .now() + .seconds(30)) == .success
    }
}

@Suite("FlowLogging: Flow's diagnostics through swift-log", .serialized)
struct DiagnosticsTests {
    /// Installs a logger at `level` recording into a new handler for the length of `body`, then puts
    /// Flow's default handler back.
    func withRecordingLogger(level: Logger.Level, _ body: (RecordingLogHandler) throws -> Void) rethrows {
        let handler = RecordingLogHandler()
        handler.logLevel = level
        FlowDiagnostics.log(to: Logger(label: "flow.tests") { _ in handler })
        defer {
            FlowDiagnostics.handler = FlowDiagnostics.standardErrorHandler
            FlowDiagnostics.minimumLevel = .warning
        }
        try body(handler)
    }

    @Test func aReportBecomesALogRecordWithItsLevelMessageAndMetadata() {
        withRecordingLogger(level: .info) { handler in
            FlowDiagnostics.report(.warning, "accepting a connection failed", metadata: ["loop": "test.loop.a"])
            let record = handler.records.first { $0.metadata["loop"] == "test.loop.a" }
            #expect(record?.level == .warning)
            #expect(record?.message == "accepting a connection failed")
            #expect(record?.source == "Flow")
        }
    }

    @Test func reportsBelowTheLoggersLevelAreNotEvenBuilt() {
        withRecordingLogger(level: .warning) { handler in
            let built = Locked(false)
            FlowDiagnostics.report(.info, { built.withLock { $0 = true }; return "detail" }())
            #expect(!built.withLock { $0 })
            #expect(FlowDiagnostics.minimumLevel == .warning)
            #expect(!FlowDiagnostics.isReported(.debug))
        }
    }

    @Test func theDefaultReportLineNamesLevelMessageAndSortedMetadata() {
        let report = FlowDiagnostics.Report(
            level: .warning, message: "loop blocked", metadata: ["loop": "api", "blockedMilliseconds": "120"],
            file: "Flow/X.swift", line: 1)
        #expect(report.description == "flow warning: loop blocked (blockedMilliseconds=120, loop=api)")
    }

    @Test func levelsMapBothWays() {
        #expect(FlowDiagnostics.Level(Logger.Level.trace) == .debug)
        #expect(FlowDiagnostics.Level(Logger.Level.notice) == .info)
        #expect(FlowDiagnostics.Level(Logger.Level.critical) == .error)
        for level in FlowDiagnostics.Level.allCases {
            #expect(FlowDiagnostics.Level(Logger.Level(level)) == level)
        }
    }

    @Test func aBlockedLoopIsReportedWithItsNameAndAgainWhenItRuns() {
        withRecordingLogger(level: .info) { handler in
            let loop = Flow.EventLoop.startOnNewThread(name: "test.blocked")
            defer { loop.shutdown() }
            let reports = loop.reportStalls(longerThan: 0.02)
            defer { reports.dispose() }
            let release = DispatchSemaphore(value: 0)
            loop.execute { release.wait() }   // a callback that blocks the loop

            let warned = handler.waitForRecord { $0.level == .warning && $0.metadata["loop"] == "test.blocked" }
            #expect(warned, "no warning that the loop is blocked")
            release.signal()
            let resumed = handler.waitForRecord { $0.level == .info && $0.metadata["loop"] == "test.blocked" }
            #expect(resumed, "no report that the loop ran again")
        }
    }
}
