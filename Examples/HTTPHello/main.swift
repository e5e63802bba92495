// HTTPHello: a minimal HTTP/1.1 keep-alive server answering "Hello, World!", for load tests.
//
//     swift run -c release HTTPHello --port 8080 --loops 2
//     swift run HTTPHello --help            (every option)
//     wrk -t2 -c100 -d10s http://127.0.0.1:8080/
//
// With `--loops N` (N > 1) the main loop and N - 1 loops on their own threads each listen on the port
// with SO_REUSEPORT, and the kernel spreads connections between them (see TCPListenerGroup).
//
// On SIGTERM or Ctrl-C it stops accepting, gives open connections up to 5 s, and exits 0.

import Flow
import FlowLogging
import FlowNet
import FlowSystem
import Logging

#if canImport(Glibc)
import Glibc
#endif

@Sendable
func serve(_ connection: TCPConnection) {
    HTTPSession(connection: connection).start()
}

let options = HTTPHelloOptions.parsed
let loopCount = options.loops
// The session options (HTTPSessionSettings.swift), made now rather than at the first connection.
_ = HTTPSessionSettings.fromCommandLine

LoggingSystem.bootstrap(StreamLogHandler.standardError)
var logger = Logger(label: "HTTPHello")
logger.logLevel = options.logLevel
FlowDiagnostics.log(to: logger)   // accept failures, blocked loops: on standard error

do {
    let address: SocketAddress
    let closeGracefully: @Sendable (_ deadline: Double) -> Future<Int>
    if loopCount == 1 {
        let listener = try TCPListener.listen(host: options.host, port: options.port, on: .main, onAccept: serve)
        address = listener.localAddress
        closeGracefully = listener.closeGracefully
    } else {
        let loops = [EventLoop.main] + (1..<loopCount).map { EventLoop.startOnNewThread(name: "http-\($0)") }
        let group = try TCPListenerGroup.listen(host: options.host, port: options.port, loops: loops, onAccept: serve)
        address = group.localAddress
        closeGracefully = group.closeGracefully
    }
    // Graceful stop: the listeners stop accepting, the open connections get up to 5 s, those left
    // are closed then; the main loop's `run()` returns once its listener and connections are closed.
    SignalWatcher.first(of: [.terminate, .interrupt], keepsLoopAlive: false, on: .main).onValue { signal in
        print("HTTPHello received \(signal): no longer accepting; open connections get up to 5 s")
        fflush(nil)
        // The main loop runs until every loop's listener and connections are closed.
        let stopping = EventLoop.main.keepAlive()
        closeGracefully(5).onValue(on: .main) { closedAtDeadline in
            stopping.dispose()
            guard closedAtDeadline > 0 else { return }
            print("HTTPHello closed \(closedAtDeadline) connection\(closedAtDeadline == 1 ? "" : "s") at the deadline")
            fflush(nil)
        }
    }
    print("HTTPHello listening on \(address) with \(loopCount) loop\(loopCount == 1 ? "" : "s")")
    fflush(nil)   // stdout is a pipe under tests: make the line visible now
    try EventLoop.main.run()
    print("HTTPHello stopped")
    exit(0)
} catch {
    print("HTTPHello: \(error)")
    exit(1)
}
