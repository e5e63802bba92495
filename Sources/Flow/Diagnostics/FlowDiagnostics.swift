import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where this library's diagnostics go: reports of accept failures, of a loop that stopped running its
/// queue for too long (``EventLoop/reportStalls(longerThan:)``), and the library's other reports of
/// problems found at run time, such as those of debug builds about futures.
///
/// By default a report at ``Level/warning`` or above is written to standard error, one line each.
/// Set ``handler`` to send reports elsewhere (FlowLogging sends them to a swift-log `Logger`), and
/// ``minimumLevel`` to see more or fewer. A report below ``minimumLevel`` costs one atomic load: its
/// message and metadata are not even built, so nothing is formatted on hot paths at default levels.
///
/// ```swift
/// FlowDiagnostics.minimumLevel = .debug
/// FlowDiagnostics.handler = { report in myLog.write("\(report.level): \(report.message) \(report.metadata)") }
///
/// // In library code:
/// FlowDiagnostics.report(.warning, "accept failed: \(reason)", metadata: ["loop": loop.name])
/// ```
public enum FlowDiagnostics {
    /// How serious a report is, from the least to the most.
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        /// Detail for someone debugging this library.
        case debug
        /// Something worth knowing that needs no action.
        case info
        /// Something probably wrong: a leaked future, a failed accept, a blocked loop.
        case warning
        /// Something wrong that lost work or data.
        case error

        /// Orders levels from ``debug`` to ``error``.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The level's name, as in `warning`.
        public var description: String {
            switch self {
            case .debug: return "debug"
            case .info: return "info"
            case .warning: return "warning"
            case .error: return "error"
            }
        }
    }

    /// One diagnostic: its level, a sentence saying what happened, and what it happened to.
    public struct Report: Sendable, CustomStringConvertible {
        /// How serious it is.
        public var level: Level
        /// A sentence saying what happened.
        public var message: String
        /// What it happened to, by name: `loop` (the loop's name), `creationSite` (where a future was
        /// created, as `File.swift:12`), `address`, `error`, ...
        public var metadata: [String: String]
        /// The library source file that made the report.
        public var file: String
        /// The line in ``file``.
        public var line: UInt

        /// Creates a report.
        public init(level: Level, message: String, metadata: [String: String] = [:], file: String, line: UInt) {
            self.level = level
            self.message = message
            self.metadata = metadata
            self.file = file
            self.line = line
        }

        /// One line: `flow warning: <message> (key=value, ...)`, keys in alphabetical order.
        public var description: String {
            let details = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            return "flow \(level): \(message)" + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")
        }
    }

    /// Receives the reports at or above ``minimumLevel``. Called on the thread that made the report
    /// (often a loop's thread, never under one of this library's locks): it must not block for long.
    public typealias Handler = @Sendable (Report) -> Void

    /// Writes the report as one line to standard error: the default ``handler``.
    public static let standardErrorHandler: Handler = { report in
        var line = report.description + "\n"
        line.withUTF8 { bytes in
            // One write(2) per report, so that lines from several threads do not interleave.
            _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count)
        }
    }

    /// Where reports go; ``standardErrorHandler`` unless set. Setting it is thread-safe and takes
    /// effect for the next report.
    public static var handler: Handler {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    /// The least serious level reported; ``Level/warning`` unless set.
    public static var minimumLevel: Level {
        get { Level(rawValue: minimumLevelValue.load(ordering: .relaxed)) ?? .warning }
        set { minimumLevelValue.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// Whether a report at `level` would reach the handler: for a caller whose report is costly to
    /// prepare beyond its message.
    @inlinable
    public static func isReported(_ level: Level) -> Bool {
        level.rawValue >= minimumLevelRawValue
    }

    /// Sends a report to ``handler`` if `level` is at or above ``minimumLevel``; otherwise does
    /// nothing, without building the message or the metadata.
    ///
    /// - Parameters:
    ///   - level: how serious it is.
    ///   - message: a sentence saying what happened.
    ///   - metadata: what it happened to, by name (`loop`, `creationSite`, ...).
    ///   - file: the library source file making the report; the caller's by default.
    ///   - line: the line in `file`.
    @inlinable
    public static func report(
        _ level: Level,
        _ message: @autoclosure () -> String,
        metadata: @autoclosure () -> [String: String] = [:],
        file: String = #fileID, line: UInt = #line
    ) {
        guard isReported(level) else { return }
        deliver(Report(level: level, message: message(), metadata: metadata(), file: file, line: line))
    }

    @usableFromInline
    static var minimumLevelRawValue: Int { minimumLevelValue.load(ordering: .relaxed) }

    @usableFromInline
    static func deliver(_ report: Report) {
        // A test that provokes the report on purpose takes it (see `capturingReports(where:_:)`).
        if captureIfClaimed(report) { return }
        // Read under the lock, called outside it: the handler is user code.
        let handler = state.withLock { $0.handler }
        handler(report)
    }

    private struct State {
        var handler: Handler = FlowDiagnostics.standardErrorHandler
    }

    private static let state = Locked(State())
    private static let minimumLevelValue = Atomic<Int>(Level.warning.rawValue)
}
