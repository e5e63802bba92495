// EchoServer: sends back every byte it receives, on one thread.
//
//     swift run EchoServer --port 7000      (0 picks a free port)
//     nc 127.0.0.1 7000
//
// Back-pressure: when a client sends faster than it reads, the bytes waiting for it pass the
// connection's write buffer limit; the server then stops reading from that client until they drain,
// so a client that never reads cannot make the server's memory grow.

import Flow
import FlowNet

#if canImport(Glibc)
import Glibc
#endif

/// Reads `--name value` from the command line.
func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

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

let host = option("--host") ?? "127.0.0.1"
guard let port = Int(option("--port") ?? "7000") else {
    print("usage: EchoServer [--host 127.0.0.1] [--port 7000]")
    exit(2)
}

do {
    let listener = try TCPListener.listen(host: host, port: port, on: .main, onAccept: echo)
    print("EchoServer listening on \(listener.localAddress)")
    fflush(nil)   // stdout is a pipe under tests: make the line visible now
    try EventLoop.main.run()
} catch {
    print("EchoServer: \(error)")
    exit(1)
}
