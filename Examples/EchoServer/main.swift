// EchoServer: sends back every byte it receives, on one thread.
//
//     swift run EchoServer --port 7000      (0 picks a free port; --help lists the options)
//     nc 127.0.0.1 7000
//
//     swift run EchoServer --unix /tmp/echo.sock
//     nc -U /tmp/echo.sock
//
// Back-pressure: when a client sends faster than it reads, the bytes waiting for it pass the
// connection's write buffer limit; the server then stops reading from that client until they drain,
// so a client that never reads cannot make the server's memory grow.
//
// Stopping: on SIGTERM or Ctrl-C the server stops accepting, lets the open connections finish for up
// to `--drain-seconds` (5 by default), closes those still open then, says what it did, and exits 0.
//
// `--structured` serves the same way, written as structured tasks (StructuredEcho.swift).

import Flow
import FlowLogging
import FlowNet
import FlowSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Prints a line at once (stdout is a pipe under tests).
func say(_ line: String) {
    print(line)
    fflush(nil)
}

/// Listeners that last as long as the program.
let programBag = DisposeBag()

/// Echoes one connection until the client closes its side, then closes once the echo went out. The
/// listener counts it until it closes.
func echo(_ connection: StreamConnection) {
    connection.onRead { event in
        switch event {
        case .bytes(let bytes):
            connection.send(copying: bytes)
            if !connection.isWritable {
                connection.pauseReading()
                connection.whenWritable().onValue { connection.resumeReading() }
            }
        case .endOfStream:
            // The shutdown waits for the queued echo, then tells the client we are done too.
            connection.shutdown().always { connection.close() }
        case .failed:
            connection.close()
        }
    }
}

/// What the two kinds of listener share for a graceful stop.
struct Listening: Sendable {
    let openConnections: ReadSignal<Int>
    let closeGracefully: @Sendable (_ deadline: Double) -> Future<Int>
}

/// On the first SIGTERM or SIGINT: the listener stops accepting, waits for the open connections up
/// to the deadline, then closes the rest. The loop's `run()` returns once everything is closed.
func stopGracefully(on signal: ProcessSignal, listening: Listening, drainSeconds: Double) {
    let waiting = listening.openConnections.value
    let stopped = listening.closeGracefully(drainSeconds)
    say("EchoServer received \(signal): no longer accepting; waiting up to \(drainSeconds) s for \(waiting) open connection\(waiting == 1 ? "" : "s")")
    stopped.onValue(on: .main) { closedAtDeadline in
        guard waiting > 0 else { return say("EchoServer stopped") }
        if closedAtDeadline > 0 {
            say("EchoServer deadline reached: closing \(closedAtDeadline) connection\(closedAtDeadline == 1 ? "" : "s")")
        }
        say("EchoServer stopped: every connection closed")
    }
}

let options = EchoServerOptions.parseOrExit()
let host = options.host
let port = options.port
let unixPath = options.unix
let drainSeconds = options.drainSeconds

LoggingSystem.bootstrap(StreamLogHandler.standardError)
var logger = Logger(label: "EchoServer")
logger.logLevel = options.logLevel
FlowDiagnostics.log(to: logger)   // accept failures, blocked loops: on standard error
if options.structured {
    runStructuredEchoServer(host: host, port: port, unixPath: unixPath, drainSeconds: drainSeconds)
}
do {
    let listening: Listening
    if let unixPath {
        let listener = try PipeListener.listen(path: unixPath, on: .main, onAccept: echo)
        listening = Listening(openConnections: listener.openConnections, closeGracefully: listener.closeGracefully)
        say("EchoServer listening on \(unixPath)")
    } else {
        let listener = try TCPListener.listen(host: host, port: port, on: .main, onAccept: echo)
        listening = Listening(openConnections: listener.openConnections, closeGracefully: listener.closeGracefully)
        say("EchoServer listening on \(listener.localAddress)")
    }
    programBag += listening.openConnections.onValue(on: .main) { [logger] count in
        logger.info("\(count) open connection\(count == 1 ? "" : "s")")
    }
    // The watcher does not keep the loop running by itself: once stopped, the loop ends with the last
    // connection.
    let stop = SignalWatcher.first(of: [.terminate, .interrupt], keepsLoopAlive: false, on: .main)
    stop.onValue { signal in stopGracefully(on: signal, listening: listening, drainSeconds: drainSeconds) }
    try EventLoop.main.run()
    exit(0)
} catch {
    print("EchoServer: \(error)")
    exit(1)
}
