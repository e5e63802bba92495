// HTTPHello: a minimal HTTP/1.1 keep-alive server answering "Hello, World!", for load tests.
//
//     swift run -c release HTTPHello --port 8080 --loops 2
//     swift run HTTPHello --help            (every option)
//     wrk -t2 -c100 -d10s http://127.0.0.1:8080/
//
// With `--loops N` (N > 1) the main loop and N - 1 loops on their own threads each listen on the port
// with SO_REUSEPORT, and the kernel spreads connections between them (see TCPListenerGroup).

import Flow
import FlowLogging
import FlowNet
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
    if loopCount == 1 {
        address = try TCPListener.listen(host: options.host, port: options.port, on: .main, onAccept: serve).localAddress
    } else {
        let loops = [EventLoop.main] + (1..<loopCount).map { EventLoop.startOnNewThread(name: "http-\($0)") }
        address = try TCPListenerGroup.listen(host: options.host, port: options.port, loops: loops, onAccept: serve).localAddress
    }
    print("HTTPHello listening on \(address) with \(loopCount) loop\(loopCount == 1 ? "" : "s")")
    fflush(nil)   // stdout is a pipe under tests: make the line visible now
    try EventLoop.main.run()
} catch {
    print("HTTPHello: \(error)")
    exit(1)
}
