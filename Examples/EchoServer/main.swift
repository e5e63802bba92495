// EchoServer: sends back every byte it receives, on one thread.
//
//     swift run EchoServer --port 7000      (0 picks a free port; --help lists the options)
//     nc 127.0.0.1 7000
//
// Back-pressure: when a client sends faster than it reads, the bytes waiting for it pass the
// connection's write buffer limit; the server then stops reading from that client until they drain,
// so a client that never reads cannot make the server's memory grow.

import Flow
import FlowLogging
import FlowNet
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Echoes one connection until the client closes its side, then closes once the echo went out.
func echo(_ connection: TCPConnection) {
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

let options = EchoServerOptions.parseOrExit()

LoggingSystem.bootstrap(StreamLogHandler.standardError)
var logger = Logger(label: "EchoServer")
logger.logLevel = options.logLevel
FlowDiagnostics.log(to: logger)   // accept failures, blocked loops: on standard error

do {
    let listener = try TCPListener.listen(host: options.host, port: options.port, on: .main, onAccept: echo)
    print("EchoServer listening on \(listener.localAddress)")
    fflush(nil)   // stdout is a pipe under tests: make the line visible now
    try EventLoop.main.run()
} catch {
    print("EchoServer: \(error)")
    exit(1)
}
