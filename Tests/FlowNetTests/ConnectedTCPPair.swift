import Flow
import FlowNet
import Testing

/// A connected pair of TCP connections on a loop of their own thread named `loopName` (`server` is the
/// accepted side), closed afterwards with their listener.
func withConnectedTCPPair(
    loopName: String,
    _ body: (_ server: TCPConnection, _ client: TCPConnection, _ loop: EventLoop) async throws -> Void
) async throws {
    let loop = EventLoop.startOnNewThread(name: loopName)
    defer { loop.shutdown() }
    let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
    let listener = try loop.performAndWait {
        try TCPListener.listen(port: 0, on: loop) { acceptedContinuation.yield($0) }
    }
    let client = try await TCPConnection.connect(to: listener.localAddress, on: loop).get()
    var iterator = accepted.makeAsyncIterator()
    let server = try #require(await iterator.next())
    do {
        try await body(server, client, loop)
    } catch {
        _ = try? await join(client.close(), server.close(), listener.close()).get()
        throw error
    }
    _ = try await join(client.close(), server.close(), listener.close()).get()
}
