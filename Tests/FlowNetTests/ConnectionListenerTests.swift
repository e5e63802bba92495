import Flow
import FlowNet
import Foundation
import Testing

/// An echo server written as structured tasks: one child task per connection, echoing lines.
private func serveEcho(_ server: ConnectionListener<TCPConnection>) async {
    await withDiscardingTaskGroup { group in
        for await connection in server.connections {
            group.addTask {
                defer { connection.close() }
                do {
                    for try await line in connection.lines(maximumLength: 1024) {
                        try await connection.writeAsync("echo: \(line)\n")
                    }
                } catch {
                    // Closed by the graceful deadline: the task ends.
                }
            }
        }
    }
}

/// Reads from `connection` until `count` bytes came or the stream ended.
private func read(_ count: Int, from connection: StreamConnection) async throws -> String {
    var received: [UInt8] = []
    while received.count < count, let chunk = try await connection.read().get() { received += chunk }
    return String(decoding: received, as: UTF8.self)
}

@Suite("Servers as structured tasks")
struct ConnectionListenerTests {
    @Test func aTaskGroupServesEveryConnectionAndAGracefulCloseEndsItWithNoTaskLeft() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.structured")
        defer { loop.shutdown() }
        let server = try await TCPListener.listenForConnections(port: 0, on: loop)
        let serving = Task { await serveEcho(server) }
        var clients: [TCPConnection] = []
        for index in 0..<3 {
            let client = try await TCPConnection.connect(host: "127.0.0.1", port: server.port, on: loop).get()
            try await client.writeAsync("hello \(index)\n")
            #expect(try await read(14, from: client) == "echo: hello \(index)\n")
            clients.append(client)
        }
        for client in clients { _ = try await client.close().get() }
        let forced = try await server.closeGracefully(deadline: 3600).get()
        // The sequence ended, every connection task returned, and so did the group.
        await serving.value
        #expect(forced == 0)
        #expect(server.openConnections.value == 0)
    }

    @Test func theGracefulDeadlineClosesAConnectionStillOpenAndItsTaskEnds() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.structured.deadline")
        defer { loop.shutdown() }
        let server = try await TCPListener.listenForConnections(port: 0, on: loop)
        let serving = Task { await serveEcho(server) }
        let idle = try await TCPConnection.connect(host: "127.0.0.1", port: server.port, on: loop).get()
        try await idle.writeAsync("still here\n")
        #expect(try await read(17, from: idle) == "echo: still here\n")
        let forced = try await server.closeGracefully(deadline: 0.05).get()
        await serving.value
        #expect(forced == 1)
        // The server's side is closed: the idle client reads the end.
        #expect(try await idle.read().get() == nil)
        _ = try await idle.close().get()
    }

    @Test func aConnectionNoTaskTookIsClosedWhenTheSequenceEnds() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.structured.unserved")
        defer { loop.shutdown() }
        let server = try await TCPListener.listenForConnections(port: 0, on: loop)
        let client = try await TCPConnection.connect(host: "127.0.0.1", port: server.port, on: loop).get()
        for await count in server.openConnections.atOnce().values where count == 1 { break }
        _ = try await server.close().get()
        #expect(try await client.read().get() == nil)
        var connections = server.connections.makeAsyncIterator()
        #expect(await connections.next() == nil)
        _ = try await client.close().get()
    }

    @Test func cancellingTheServingTaskEndsItsWaitForAConnection() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.structured.cancel")
        defer { loop.shutdown() }
        let server = try await TCPListener.listenForConnections(port: 0, on: loop)
        let serving = Task { await serveEcho(server) }
        serving.cancel()
        await serving.value
        _ = try await server.close().get()
    }

    @Test func aPipeListenerServesItsConnectionsAsASequenceToo() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.structured.pipe")
        defer { loop.shutdown() }
        let folder = NSTemporaryDirectory() + "flow-structured-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try await PipeListener.listenForConnections(path: folder + "/echo.sock", on: loop)
        #expect(server.localAddress == nil)
        let serving = Task {
            for await connection in server.connections {
                for try await line in connection.lines() { try await connection.writeAsync("pipe: \(line)\n") }
                connection.close()
            }
        }
        let client = try await PipeConnection.connect(toPath: folder + "/echo.sock", on: loop).get()
        try await client.writeAsync("hi\n")
        #expect(try await read(9, from: client) == "pipe: hi\n")
        _ = try await client.close().get()
        _ = try await server.closeGracefully(deadline: 3600).get()
        try await serving.value
    }
}
