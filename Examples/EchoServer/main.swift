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

/// The connections open now, so that the deadline of a graceful stop can close those left.
let openConnections = LoopBoundBox<[ObjectIdentifier: StreamConnection]>([:], loop: .main)
/// How many connections are open: logged as it changes, and what a graceful stop waits on.
let openConnectionCount = ReadWriteSignal(0)
/// Listeners that last as long as the program.
let programBag = DisposeBag()

/// Closes `connection` and forgets it once closed.
func finish(_ connection: StreamConnection) {
    connection.close().onValue(on: .main) {
        openConnections.value[ObjectIdentifier(connection)] = nil
        openConnectionCount.value = openConnections.value.count
    }
}

/// Echoes one connection until the client closes its side, then closes once the echo went out.
func echo(_ connection: StreamConnection) {
    openConnections.value[ObjectIdentifier(connection)] = connection
    openConnectionCount.value = openConnections.value.count
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
            connection.shutdown().always { finish(connection) }
        case .failed:
            finish(connection)
        }
    }
}

/// On the first SIGTERM or SIGINT: stop accepting, wait for the open connections up to the deadline,
/// then close the rest. The loop's `run()` returns once everything is closed.
func stopGracefully(on signal: ProcessSignal, stopListening: () -> Void, drainSeconds: Double) {
    stopListening()
    let waiting = openConnectionCount.value
    say("EchoServer received \(signal): no longer accepting; waiting up to \(drainSeconds) s for \(waiting) open connection\(waiting == 1 ? "" : "s")")
    guard waiting > 0 else {
        say("EchoServer stopped")
        return
    }
    let deadline = EventLoop.main.execute(after: drainSeconds) {
        let left = openConnections.value.values
        say("EchoServer deadline reached: closing \(left.count) connection\(left.count == 1 ? "" : "s")")
        for connection in left { finish(connection) }
    }
    programBag += openConnectionCount.filter { $0 == 0 }.onFirstValue(on: .main) { _ in
        deadline.dispose()
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
programBag += openConnectionCount.onValue(on: .main) { [logger] count in
    logger.info("\(count) open connection\(count == 1 ? "" : "s")")
}

do {
    let stopListening: @Sendable () -> Void
    if let unixPath {
        let listener = try PipeListener.listen(path: unixPath, on: .main, onAccept: echo)
        stopListening = { listener.close() }
        say("EchoServer listening on \(unixPath)")
    } else {
        let listener = try TCPListener.listen(host: host, port: port, on: .main, onAccept: echo)
        stopListening = { listener.close() }
        say("EchoServer listening on \(listener.localAddress)")
    }
    // The watcher does not keep the loop running by itself: once stopped, the loop ends with the last
    // connection.
    let stop = SignalWatcher.first(of: [.terminate, .interrupt], keepsLoopAlive: false, on: .main)
    stop.onValue { signal in stopGracefully(on: signal, stopListening: stopListening, drainSeconds: drainSeconds) }
    try EventLoop.main.run()
    exit(0)
} catch {
    print("EchoServer: \(error)")
    exit(1)
}
