import Flow
import FlowNet
import FlowTestSupport
import Foundation
import Testing

/// A listener's handle is owned by its core until libuv's close callback runs; a listener its loop
/// closes under it must be closed that way too, or the core (with its accept callback, read buffer
/// and connection count) is never released.
@Suite("Listeners let go of what they hold when their loop closes")
struct ListenerReleaseTests {
    @Test func aListenerLeftOpenWhenItsLoopShutsDownIsReleasedWithItsAcceptCallback() throws {
        let live = LiveObjects()
        let loop = EventLoop.startOnNewThread(name: "net.release.tcp")
        let waiting: Future<Int>
        do {
            let tracked = live.make()
            let listener = try TCPListener.listen(port: 0, on: loop) { _ in tracked.touch() }
            // Someone still waits for a connection that will not come.
            waiting = listener.openConnections.atOnce().filter { $0 == 1 }.future
        }
        #expect(live.alive == 1, "the open listener holds its accept callback")
        loop.shutdown()
        #expect(live.alive == 0, "the loop's closing closed the listener, which let go of its accept callback")
        #expect(!waiting.isCompleted)
        waiting.cancel()
    }

    @Test func aPipeListenerLeftOpenWhenItsLoopShutsDownIsReleasedToo() throws {
        let live = LiveObjects()
        let path = NSTemporaryDirectory() + "flow-release-\(getpid()).sock"
        let loop = EventLoop.startOnNewThread(name: "net.release.pipe")
        do {
            let tracked = live.make()
            _ = try PipeListener.listen(path: path, on: loop) { connection in
                tracked.touch()
                connection.close()
            }
        }
        #expect(live.alive == 1)
        loop.shutdown()
        #expect(live.alive == 0)
        unlink(path)
    }
}
