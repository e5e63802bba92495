import ArgumentParser
import Logging

/// EchoServer's command line: `swift run EchoServer --help` lists it. A bad value is a usage error
/// (exit status 64) that names the option.
struct EchoServerOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "EchoServer",
        abstract: "Sends back every byte it receives, on one thread, with back-pressure for clients that do not read.")

    @Option(help: "The numeric address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port = 7000

    @Option(help: "The least serious log level shown: trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535, not \(port).") }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
