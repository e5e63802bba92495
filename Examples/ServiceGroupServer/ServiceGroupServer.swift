// ServiceGroupServer: a Flow TCP server and a periodic job under a swift-service-lifecycle
// `ServiceGroup`. SIGTERM (or Ctrl-C) shuts them down gracefully: the job stops, the server stops
// accepting, open connections get `--shutdown-deadline` seconds to finish, then the loops close.
//
//     swift run ServiceGroupServer --port 7100
//     nc 127.0.0.1 7100          # every line you send is answered with "hello"
//     kill -TERM <pid>           # or Ctrl-C

import ArgumentParser
import ExampleSupport
import Flow
import FlowLogging
import FlowNet
import FlowServiceLifecycle
import FlowTimers
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

@main
struct ServiceGroupServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A Flow TCP server and a periodic job under a ServiceGroup, stopped gracefully by SIGTERM.")

    @Option(help: "The numeric address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port to listen on; 0 picks a free one.")
    var port = 7100

    @Option(help: "How many event loops serve connections.")
    var loops = 1

    @Option(help: "Seconds between two runs of the periodic job.")
    var interval = 1.0

    @Option(help: "Seconds open connections get to finish once shutdown begins.")
    var shutdownDeadline = 5.0

    @OptionGroup var logging: LoggingOptions

    var logLevel: Logger.Level { logging.logLevel }

    func validate() throws {
        try validatePort(port)
        guard loops > 0 else { throw ValidationError("--loops must be at least 1, not \(loops).") }
        guard interval > 0, interval.isFinite else { throw ValidationError("--interval must be a positive number of seconds.") }
        guard shutdownDeadline >= 0, shutdownDeadline.isFinite else {
            throw ValidationError("--shutdown-deadline must be zero or a positive number of seconds.")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "ServiceGroupServer")
        logger.logLevel = logLevel
        FlowDiagnostics.log(to: logger)

        let server = FlowServerService(
            loopCount: loops, name: "server", shutdownDeadline: .milliseconds(Int(shutdownDeadline * 1000))
        ) { [host, port] loops in
            try GreetingServer(host: host, port: port, loops: loops, shutdownDeadline: shutdownDeadline).start()
        }
        let job = PeriodicJob(loop: server.loops[0], interval: interval, logger: logger)
        // Shut down in reverse order: the job first, then the server, which closes the loops.
        let group = ServiceGroup(
            services: [server, job], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
        print("ServiceGroupServer stopped")
    }
}

/// The answer to every line a client sends, made once and shared by every write.
let helloLine = SharedBytes("hello\n")

/// Answers every line a client sends with `hello`, and closes when the client does.
struct GreetingServer {
    let host: String
    let port: Int
    let loops: [Flow.EventLoop]
    /// Seconds open connections get to finish once shutdown begins.
    let shutdownDeadline: Double

    func start() throws -> FlowServerService.Running {
        let listeners = try TCPListenerGroup.listen(host: host, port: port, loops: loops) { connection in
            // Lines of up to 4 KiB; a longer one ends the signal with an error, and the connection.
            let reading = DisposeBag()
            reading += connection.lineSignal(maximumLength: 4096).onEvent(on: .none) { event in
                switch event {
                case .value:
                    connection.send(helloLine)
                case .end:
                    reading.dispose()
                    connection.close()
                }
            }
        }
        print("ServiceGroupServer listening on \(listeners.localAddress)")
        fflush(nil)   // stdout is a pipe under tests: make the line visible now
        // Each listener counts its open connections: the graceful close stops accepting, gives them
        // until the deadline, then closes those left.
        return FlowServerService.Running(
            stopAccepting: { listeners.closeGracefully(deadline: shutdownDeadline).toVoid() })
    }
}

/// A job that runs every `interval` seconds on a Flow loop until graceful shutdown.
struct PeriodicJob: Service {
    let loop: Flow.EventLoop
    let interval: Double
    let logger: Logger

    func run() async throws {
        let timer = loop.scheduler.repeatingTimer(every: interval) { [logger] tick in
            logger.debug("periodic job", metadata: ["tick": "\(tick.number)"])
            print("tick \(tick.number)")
            fflush(nil)
        }
        try? await gracefulShutdown()
        timer.dispose()
    }
}
