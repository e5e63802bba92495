import CFlowSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The thread of a loop started with ``EventLoop/startOnNewThread(name:)``.
final class LoopThread: @unchecked Sendable {
    // @unchecked Sendable: `thread` is written once by `start()` before any other thread can see this
    // object through `stopAndJoin()`, which the loop's `ownThread` mutex orders after `start()`.
    private let loop: EventLoop
    private let keepAlive: Disposable
    private var thread: pthread_t?

    init(loop: EventLoop, keepAlive: Disposable) {
        self.loop = loop
        self.keepAlive = keepAlive
    }

    func start() {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        let status = pthread_create(&thread, nil, { argument in
            let loopThread = Unmanaged<LoopThread>.fromOpaque(argument!).takeRetainedValue()
            loopThread.main()
            return nil
        }, box)
        precondition(status == 0, "EventLoop.startOnNewThread: pthread_create failed with \(status)")
        self.thread = thread
    }

    private func main() {
        flow_set_thread_name(loop.name)
        do {
            try loop.run()
        } catch {
            misuseFailure("EventLoop thread '\(loop.name)': \(error)")
        }
    }

    func stopAndJoin() {
        keepAlive.dispose()
        loop.stop()
        if let thread {
            pthread_join(thread, nil)
        }
    }
}
