import ArgumentParser
import ExampleSupport
import Logging

/// RetryJob's command line: `swift run RetryJob --help` lists it. A bad value is a usage error (exit
/// status 64) that names the option.
struct RetryJobOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "RetryJob",
        abstract: "Fetches a report from a flaky in-process service, retrying with exponential backoff and jitter.",
        discussion: """
            The retries live in this process's memory. For retries that must survive a crash or a restart, \
            see `swift run JobRunner`: durable jobs in an SQLite database, with the same backoff.
            """)

    @Option(help: "How many attempts the service makes fail before it answers.")
    var failFirst = 3

    @Option(help: "How many times the job retries after its first attempt before it gives up.")
    var maxRetries = 5

    @OptionGroup var logging: LoggingOptions

    var logLevel: Logger.Level { logging.logLevel }

    func validate() throws {
        guard failFirst >= 0 else { throw ValidationError("--fail-first must be 0 or more, not \(failFirst).") }
        guard maxRetries >= 0 else { throw ValidationError("--max-retries must be 0 or more, not \(maxRetries).") }
    }
}
