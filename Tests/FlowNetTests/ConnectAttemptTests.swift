import CLibUV
import Flow
@testable import FlowNet
import Testing

@Suite("Connect attempts")
struct ConnectAttemptTests {
    /// The race of a cancellation from another thread with a connect that succeeds, played in order on
    /// one loop: the future is cancelled (nobody wants its result any more) just before libuv reports
    /// the connection, and the attempt's `cancel()`, which the cancelling thread queues on the loop,
    /// runs just after. Nobody received the connection, so the attempt must close it.
    @Test func aConnectionMadeAfterItsFutureWasCancelledIsClosed() throws {
        let outcome = Shared<String?>(nil)
        try runLoopCheckingHandles { loop in
            let listener = try! TCPListener.listen(port: 0, on: loop) { accepted in accepted.close() }
            let future = LoopState<Future<TCPConnection>?>(nil)
            let attempt = ConnectAttempt<TCPConnection>(didConnect: { _ in
                // Right before the success is handed to the future: the consumer gives up now.
                future.value?.cancel()
            })
            future.value = attempt.connected.future(onCancel: {
                // As from another thread: the cancellation reaches the attempt later, on the loop.
                loop.execute {
                    attempt.cancel()
                    outcome.value = "\(String(describing: future.value?.result?.error))"
                    // The future's cancel handler captures `future` (and the attempt): let go of it, or the
                    // test's own objects keep each other alive.
                    future.value = nil
                    listener.close()
                }
            })
            let address = try! SocketAddress(host: "127.0.0.1", port: listener.port)
            attempt.start(make: { () throws(EventLoopError) in
                try TCPConnection(loop: loop, readBuffer: ReadBuffer())
            }) { connection, request, callback in
                address.withSockaddr { uv_tcp_connect(request, connection.tcpHandle, $0, callback) }
            }
        }
        #expect(outcome.value == "Optional(FutureError.aborted: the future was cancelled before it completed)")
    }
}
