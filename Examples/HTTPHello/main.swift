// HTTPHello: a minimal HTTP/1.1 keep-alive server answering "Hello, World!", for load tests.
//
//     swift run -c release HTTPHello --port 8080 --loops 2
//     wrk -t2 -c100 -d10s http://127.0.0.1:8080/
//
// With `--loops N` (N > 1) the main loop and N - 1 loops on their own threads each listen on the port
// with SO_REUSEPORT, and the kernel spreads connections between them (see TCPListenerGroup).
//
// On SIGTERM or Ctrl-C it stops accepting, gives open connections up to 5 s, and exits 0.

import Dispatch
import Flow
import FlowNet
import FlowSystem

#if canImport(Glibc)
import Glibc
#endif

/// Reads `--name value` from the command line.
func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

@Sendable
func serve(_ connection: TCPConnection) {
    HTTPSession(connection: connection).start()
}

let host = option("--host") ?? "127.0.0.1"
guard let port = Int(option("--port") ?? "8080"), let loopCount = Int(option("--loops") ?? "1"), loopCount >= 1 else {
    print("usage: HTTPHello [--host 127.0.0.1] [--port 8080] [--loops 1]")
    exit(2)
}
// The session options (HTTPSessionSettings.swift), checked now rather than at the first connection.
_ = HTTPSessionSettings.fromCommandLine

do {
    let address: SocketAddress
    let stopListening: @Sendable () -> Void
    if loopCount == 1 {
        let listener = try TCPListener.listen(host: host, port: port, on: .main, onAccept: serve)
        address = listener.localAddress
        stopListening = { listener.close() }
    } else {
        let loops = [EventLoop.main] + (1..<loopCount).map { EventLoop.startOnNewThread(name: "http-\($0)") }
        let group = try TCPListenerGroup.listen(host: host, port: port, loops: loops, onAccept: serve)
        address = group.localAddress
        stopListening = { group.close() }
    }
    // Graceful stop: the main loop's `run()` returns once its listener and connections are closed;
    // whatever is still open after the deadline is dropped with the process.
    SignalWatcher.first(of: [.terminate, .interrupt], keepsLoopAlive: false, on: .main).onValue { signal in
        print("HTTPHello received \(signal): no longer accepting; open connections get up to 5 s")
        fflush(nil)
        stopListening()
        // A Dispatch timer, unlike a loop timer, does not keep the loop running until the deadline.
        DispatchQueue.global().asyncAfter(deadline: .now() + 5) {
            print("HTTPHello stopped at the deadline")
            exit(0)
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
