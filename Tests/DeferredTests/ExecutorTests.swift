// Executors, and the Deferred layer on Flow's event loops and schedulers. This file imports Flow,
// whose `Future` and `Task` clash with Deferred's: it names neither.
import Deferred
import Dispatch
import Flow
import Foundation
import Testing

@Suite("Executors")
struct ExecutorTests {
    @Test("a DispatchQueue runs upon closures, and DispatchQueue.any() is a concurrent queue")
    func dispatchQueue() {
        let ran = DispatchSemaphore(value: 0)
        let deferred = Deferred(filledWith: 1)
        deferred.upon(DispatchQueue(label: "serial")) { _ in ran.signal() }
        deferred.upon(.any()) { _ in ran.signal() }
        expectSignals(ran, count: 2, "the closures on queues")
    }

    @Test("an OperationQueue runs upon closures")
    func operationQueue() {
        let ran = DispatchSemaphore(value: 0)
        let queue = OperationQueue()
        Deferred(filledWith: 1).upon(queue) { _ in ran.signal() }
        expectSignal(ran, "the closure on the operation queue")
    }

    @Test("a RunLoop runs upon closures when it runs")
    func runLoop() {
        let loopReady = DispatchSemaphore(value: 0)
        let ran = DispatchSemaphore(value: 0)
        let onRunLoopThread = Shared(false)
        let runLoopBox = Shared<RunLoopReference?>(nil)
        let thread = Thread {
            let runLoop = RunLoop.current
            let reference = RunLoopReference(runLoop)
            runLoopBox.mutate { $0 = reference }
            loopReady.signal()
            let deadline = Date().addingTimeInterval(30)
            while ran.wait(timeout: .now()) == .timedOut, Date() < deadline {
                runLoop.run(until: Date().addingTimeInterval(0.01))
            }
            ran.signal()
        }
        thread.start()
        expectSignal(loopReady, "the run loop thread")
        guard let runLoop = runLoopBox.value?.runLoop else { return }
        let threadOfRunLoop = runLoopBox.value?.thread
        Deferred(filledWith: 1).upon(runLoop) { _ in
            let thread = ObjectIdentifier(Thread.current)
            onRunLoopThread.mutate { $0 = thread == threadOfRunLoop }
            ran.signal()
        }
        expectSignal(ran, "the closure on the run loop")
        #expect(onRunLoopThread.value)
    }

    @Test("an EventLoop and its scheduler run upon closures on the loop")
    func eventLoopAndScheduler() {
        let loop = EventLoop.startOnNewThread(name: "deferred.test.loop")
        defer { loop.shutdown() }
        let ran = DispatchSemaphore(value: 0)
        let onLoop = Shared<[Bool]>([])
        let deferred = Deferred<Int>()
        deferred.upon(loop) { _ in
            onLoop.mutate { $0.append(loop.isInLoopContext) }
            ran.signal()
        }
        deferred.upon(loop.scheduler) { _ in
            onLoop.mutate { $0.append(loop.isInLoopContext) }
            ran.signal()
        }
        deferred.fill(with: 1)
        expectSignals(ran, count: 2, "the closures on the loop")
        #expect(onLoop.value == [true, true])
    }

    @Test("the default executor is a background queue even for code running on a loop, as in Deferred")
    func defaultExecutorOnLoop() {
        let loop = EventLoop.startOnNewThread(name: "deferred.test.default")
        defer { loop.shutdown() }
        let ran = DispatchSemaphore(value: 0)
        let onLoop = Shared(true)
        let deferred = Deferred<Int>()
        loop.execute {
            deferred.upon { _ in
                onLoop.mutate { $0 = loop.isInLoopContext }
                ran.signal()
            }
        }
        DispatchQueue.global().async { deferred.fill(with: 1) }
        expectSignal(ran, "the closure")
        #expect(!onLoop.value)
    }

    @Test("naming the loop brings the closure back to it")
    func namedLoopExecutor() {
        let loop = EventLoop.startOnNewThread(name: "deferred.test.named")
        defer { loop.shutdown() }
        let ran = DispatchSemaphore(value: 0)
        let onLoop = Shared(false)
        let deferred = Deferred<Int>()
        loop.execute {
            deferred.upon(loop) { _ in
                onLoop.mutate { $0 = loop.isInLoopContext }
                ran.signal()
            }
        }
        DispatchQueue.global().async { deferred.fill(with: 1) }
        expectSignal(ran, "the closure")
        #expect(onLoop.value)
    }

    @Test("the default executor off any scheduler is a background queue")
    func defaultExecutorOffScheduler() {
        let ran = DispatchSemaphore(value: 0)
        let onBackground = Shared(false)
        Thread {
            Deferred(filledWith: 1).upon { _ in
                onBackground.mutate { $0 = !Thread.isMainThread && Scheduler.executing == nil }
                ran.signal()
            }
        }.start()
        expectSignal(ran, "the closure")
        #expect(onBackground.value)
    }

    @Test("a closure given on the loop for a filled value runs at once on the loop's scheduler")
    func immediateOnLoopScheduler() {
        let loop = EventLoop.startOnNewThread(name: "deferred.test.immediate")
        defer { loop.shutdown() }
        let order = Shared<[String]>([])
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            Deferred(filledWith: 1).upon(loop.scheduler) { _ in order.mutate { $0.append("upon") } }
            order.mutate { $0.append("after upon") }
            done.signal()
        }
        expectSignal(done, "the loop job")
        #expect(order.value == ["upon", "after upon"])
    }

    @Test("waiting on the loop's thread for a filled value returns it")
    func waitOnLoopWhenFilled() {
        let loop = EventLoop.startOnNewThread(name: "deferred.test.wait")
        defer { loop.shutdown() }
        let seen = Shared<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        loop.execute {
            seen.mutate { $0 = Deferred(filledWith: 3).wait(until: .distantFuture) }
            done.signal()
        }
        expectSignal(done, "the loop job")
        #expect(seen.value == 3)
    }

    @Test("waiting on a running loop's thread for a value not there stops the program instead of deadlocking")
    func waitOnLoopTraps() async {
        await #expect(processExitsWith: .failure) {
            let loop = EventLoop.startOnNewThread(name: "deferred.test.deadlock")
            loop.execute {
                _ = Deferred<Int>().wait(until: .now() + .seconds(20))
                exit(0)
            }
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .seconds(40))
            exit(0)
        }
    }
}

/// A run loop and its thread, handed from the thread that owns them to the test.
// @unchecked Sendable: `RunLoop` is not Sendable, but the test only passes it to `upon`, whose
// `submit` is `perform(_:)`, which CFRunLoop makes thread-safe; `thread` identifies the run loop's thread.
private struct RunLoopReference: @unchecked Sendable {
    let runLoop: RunLoop
    let thread: ObjectIdentifier

    init(_ runLoop: RunLoop) {
        self.runLoop = runLoop
        thread = ObjectIdentifier(Thread.current)
    }
}
