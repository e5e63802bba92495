import Flow
import FlowNet
import FlowTestSupport
import FlowTesting
import FlowTimers
import Testing

/// Reflection stopped the process in `__swift_cannot_copy_noncopyable_type` on reaching a lock's
/// non-copyable state (the event loop's queue of submissions, say): a failed `#expect` naming an event
/// loop crashed the test run. Each public type holding locks or atomics, or reaching them through what
/// it holds, must print every way.
@Suite("Printing the types that hold locks and atomics")
struct ReflectionTests {
    @Test("an event loop, running or closed, prints its name and state, as does its scheduler")
    func eventLoop() {
        let loop = EventLoop.startOnNewThread(name: "test.printed")
        expectPrintedEveryWay([(loop, "test.printed"), (loop.scheduler, "Scheduler(test.printed)")])
        #expect(String(reflecting: loop) == "EventLoop(test.printed, running)")
        loop.shutdown()
        expectPrintedEveryWay([(loop, "test.printed")])
        #expect(String(reflecting: loop) == "EventLoop(test.printed, closed)")
    }

    @Test("futures, pending, completed and chained, and the helpers holding them print their state")
    func futures() {
        let loop = EventLoop.startOnNewThread(name: "test.printed.futures")
        defer { loop.shutdown() }
        let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
        let pending = Future<Int>(on: loop.scheduler) { done in
            completion.set(done)
            return NilDisposer()
        }
        // The operation runs on the loop: wait for it, or it could store its completion after the
        // test let go of it below, and the future, its operation and this box would be leaked.
        loop.performAndWait {}
        let chained = pending.map(on: .none) { $0 + 1 }
        expectPrintedEveryWay([
            (pending, "pending"), (chained, "Future<Int>"), (Future(7), "7"),
            (FutureQueue(resource: "printer"), "maxConcurrentCount"),
            (SingleTaskPerformer<Int>(), "isPerforming"), (LiveFutureCount(), "LiveFutureCount"),
        ])
        chained.cancel()
        completion.value?(.success(1))
        // The future keeps its operation (to run it again on repetition), and the operation this box:
        // let go of the completion, which holds the future, or the three keep each other alive.
        completion.set(nil)
    }

    @Test("signals, callbackers, timers, disposables and the bags holding them print")
    func signalsAndDisposables() {
        let loop = EventLoop.startOnNewThread(name: "test.printed.signals")
        defer { loop.shutdown() }
        let callbacker = Callbacker<Int>()
        let bag = DisposeBag()
        bag += callbacker.addCallback { _ in }
        bag += callbacker.providedSignal.onValue { _ in }
        bag += loop.scheduler.async(after: 60) {}
        bag += loop.scheduler.repeatingTimer(every: 60) {}
        expectPrintedEveryWay([
            (callbacker, "isEmpty: false"), (callbacker.providedSignal, "Signal"), (bag, "DisposeBag"),
            (Debouncer<Int>(on: loop.scheduler, interval: 1), "interval"),
        ])
        bag.dispose()
    }

    @Test("a virtual clock and its scheduler print")
    func virtualTime() {
        let clock = VirtualTimeScheduler()
        let bag = DisposeBag()
        bag += clock.scheduler.async(after: 1) {}
        expectPrintedEveryWay([(clock, "pendingCount: 1"), (clock.scheduler, "Scheduler")])
        bag.dispose()
    }

    @Test("network handles print their addresses")
    func networkHandles() throws {
        let loop = EventLoop.startOnNewThread(name: "test.printed.net")
        defer { loop.shutdown() }
        let listener = try loop.scheduler.sync { () throws -> TCPListener in
            try TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { $0.close() }
        }
        let socket = try loop.scheduler.sync { () throws -> UDPSocket in
            try UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
        }
        expectPrintedEveryWay([(listener, "127.0.0.1"), (socket, "127.0.0.1")])
        _ = wait(for: listener.close(), "the listener to close")
        _ = wait(for: socket.close(), "the socket to close")
    }
}
