import Flow
import Logging

extension FlowDiagnostics {
    /// Sends this library's diagnostics to `logger`, at the logger's level: from then on
    /// `FlowDiagnostics.minimumLevel` follows `logger.logLevel`, and each report becomes one log
    /// record with source `Flow` and the report's metadata (`loop`, `creationSite`, `address`, ...).
    ///
    /// Call it once at startup, after `LoggingSystem.bootstrap`. Call it again to change the logger or
    /// its level.
    ///
    /// ```swift
    /// LoggingSystem.bootstrap(StreamLogHandler.standardError)
    /// var logger = Logger(label: "my-server")
    /// logger.logLevel = .info
    /// FlowDiagnostics.log(to: logger)
    /// ```
    public static func log(to logger: Logger) {
        minimumLevel = Level(logger.logLevel)
        handler = { report in
            logger.log(
                level: Logger.Level(report.level), "\(report.message)",
                metadata: report.metadata.mapValues { .string($0) },
                source: "Flow", file: report.file, function: "", line: report.line)
        }
    }
}

extension FlowDiagnostics.Level {
    /// The diagnostic level matching a swift-log level: `trace` and `debug` are `.debug`, `info` and
    /// `notice` are `.info`, `warning` is `.warning`, `error` and `critical` are `.error`.
    public init(_ level: Logger.Level) {
        switch level {
        case .trace, .debug: self = .debug
        case .info, .notice: self = .info
        case .warning: self = .warning
        case .error, .critical: self = .error
        }
    }
}

extension Logger.Level {
    /// The swift-log level of a diagnostic level.
    public init(_ level: FlowDiagnostics.Level) {
        switch level {
        case .debug: self = .debug
        case .info: self = .info
        case .warning: self = .warning
        case .error: self = .error
        }
    }
}
