import ArgumentParser
import ExampleSupport
import Logging

/// EchoServer's command line: `swift run EchoServer --help` lists it. A bad value is a usage error
/// (exit status 64) that names the option.
struct EchoServerOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "EchoServer",
        abstract: "Sends back every byte it receives, on one thread, with back-pressure for clients that do not read.",
        discussion: """
            On SIGTERM or Ctrl-C it stops accepting, lets the open connections finish for up to --drain-seconds, \
            closes those still open then, and exits 0.
            """)

    @Option(help: "The numeric address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port = 7000

    @Option(help: "Listen on this Unix domain socket path instead of TCP.")
    var unix: String?

    @Option(help: "Seconds open connections get to finish after SIGTERM or Ctrl-C.")
    var drainSeconds: Double = 5

    @Flag(help: "Serve as structured tasks: the connections as an async sequence, one child task each.")
    var structured = false

    @OptionGroup var logging: LoggingOptions

    var logLevel: Logger.Level { logging.logLevel }

    func validate() throws {
        try validatePort(port)
        guard drainSeconds >= 0, drainSeconds.isFinite else {
            throw ValidationError("--drain-seconds must be zero or a positive number of seconds, not \(drainSeconds).")
        }
    }
}
