import ArgumentParser
import Logging

/// `--log-level`, as every example that logs takes it: `@OptionGroup var logging: LoggingOptions`.
public struct LoggingOptions: ParsableArguments, Sendable {
    /// The least serious level a logger shows.
    @Option(help: "The least serious log level shown: trace, debug, info, notice, warning, error or critical.")
    public var logLevel: Logger.Level = .info

    /// The defaults: `info`.
    public init() {}
}

// Declared once here: each example declaring it would put several copies of the conformance in a
// test bundle that links more than one example.
extension Logger.Level: @retroactive ExpressibleByArgument {}
