// EchoServer's structured-task mode (`--structured`): the same server written async first. The
// listener's connections are an `AsyncSequence` served by a task group, one child task per
// connection; each reads its chunks as a sequence and writes with `await`, so a client that does not
// read stops its own reads (the next chunk is read once the last one is with the kernel). SIGTERM or
// Ctrl-C closes the listener gracefully: the sequence ends, the open connections get
// `--drain-seconds` to finish, the rest are closed, and the group ends with no task left.

import Flow
import FlowNet
import FlowSystem

#if canImport(Glibc)
import Glibc
#endif

/// Echoes `connection` until the client closes its side, then shuts down and closes it.
func echoChunks(_ connection: StreamConnection) async {
    do {
        for try await chunk in connection.chunks {
            try await connection.writeAsync(chunk)
        }
        _ = try? await connection.shutdown().get()
    } catch {
        // A read or write failed, or the drain deadline closed the connection: nothing left to echo.
    }
    connection.close()
}

/// Serves every connection of `server` in a child task, until the server is closed.
func serveEchoTasks<Connection>(_ server: ConnectionListener<Connection>) async {
    await withDiscardingTaskGroup { group in
        for await connection in server.connections {
            group.addTask { await echoChunks(connection) }
        }
    }
}

/// Runs the structured-task server on the main loop until it has stopped, then exits.
func runStructuredEchoServer(host: String, port: Int, unixPath: String?, drainSeconds: Double) -> Never {
    // The serving task ends after the last connection closes: the loop waits for it.
    let servingTask = EventLoop.main.keepAlive()
    Task {
        do {
            let listening: Listening
            let serving: @Sendable () async -> Void
            if let unixPath {
                let server = try await PipeListener.listenForConnections(path: unixPath, on: .main)
                listening = Listening(openConnections: server.openConnections, closeGracefully: server.closeGracefully)
                serving = { await serveEchoTasks(server) }
                say("EchoServer listening on \(unixPath)")
            } else {
                let server = try await TCPListener.listenForConnections(host: host, port: port, on: .main)
                listening = Listening(openConnections: server.openConnections, closeGracefully: server.closeGracefully)
                serving = { await serveEchoTasks(server) }
                say("EchoServer listening on \(server.localAddress!)")
            }
            let stop = SignalWatcher.first(of: [.terminate, .interrupt], keepsLoopAlive: false, on: .main)
            // On the main loop, as in the callback mode: the listener stops accepting before the message.
            stop.onValue(on: .main) { signal in
                stopGracefully(on: signal, listening: listening, drainSeconds: drainSeconds)
            }
            await serving()
        } catch {
            say("EchoServer: \(error)")
            exit(1)
        }
        servingTask.dispose()
    }
    do {
        try EventLoop.main.run()
    } catch {
        say("EchoServer: \(error)")
        exit(1)
    }
    exit(0)
}
