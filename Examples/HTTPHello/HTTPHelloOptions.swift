import ArgumentParser
import ExampleSupport
import HTTPParsing
import Logging

/// HTTPHello's command line: `swift run HTTPHello --help` lists it. A bad value is a usage error (exit
/// status 64) that names the option.
struct HTTPHelloOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "HTTPHello",
        abstract: "A minimal HTTP/1.1 keep-alive server answering \"Hello, World!\", for load tests.",
        discussion: """
            With --loops N (N > 1) the main loop and N - 1 loops on their own threads each listen on the port \
            with SO_REUSEPORT, and the kernel spreads connections between them.
            """)

    @Option(help: "The numeric address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(help: "How many event loops, one per thread, share the port.")
    var loops = 1

    @Option(help: "Seconds a request may take from its first byte (and the first request from the connection); then 408.")
    var requestTimeout: Double = 10

    @Option(help: "Seconds a kept-alive connection may idle, or not read its answers, before it is closed.")
    var idleTimeout: Double = 30

    @Option(help: "The longest request head in bytes, final blank line included; longer gets 431.")
    var maxHead = HTTPRequestLimits().maximumHeadSize

    @Option(help: "The most header lines in one request; more gets 431.")
    var maxHeaders = HTTPRequestLimits().maximumHeaderCount

    @Option(help: "The largest Content-Length accepted, in bytes; larger gets 413.")
    var maxBody = HTTPRequestLimits().maximumBodySize

    @Option(help: "Connections one loop holds (default: the descriptor limit less 32, shared by the loops).")
    var maxConnections: Int?

    @OptionGroup var logging: LoggingOptions

    var logLevel: Logger.Level { logging.logLevel }

    func validate() throws {
        try validatePort(port)
        guard loops >= 1 else { throw ValidationError("--loops must be at least 1, not \(loops).") }
        // At most a year: deadlines are kept in nanoseconds of a UInt64.
        for (name, seconds) in [("--request-timeout", requestTimeout), ("--idle-timeout", idleTimeout)] {
            guard seconds > 0, seconds <= 366 * 86_400 else {
                throw ValidationError("\(name) must be a number of seconds above 0 and at most a year, not \(seconds).")
            }
        }
        for (name, count) in [("--max-head", maxHead), ("--max-headers", maxHeaders), ("--max-body", maxBody)] {
            guard count > 0 else { throw ValidationError("\(name) must be above 0, not \(count).") }
        }
        if let maxConnections, maxConnections < 1 {
            throw ValidationError("--max-connections must be at least 1, not \(maxConnections).")
        }
    }

    /// The options the program was started with, read once; a bad command line exits here.
    static let parsed = HTTPHelloOptions.parseOrExit()
}
