import Dispatch
import Flow
import FlowNIO
import NIOCore
import Testing

/// Waits for `future` from a thread that is not its loop's, for at most the hang guard.
private func outcome<Value: Sendable>(of future: EventLoopFuture<Value>) -> Swift.Result<Value, any Error>? {
    let done = DispatchSemaphore(value: 0)
    let result = Shared<Swift.Result<Value, any Error>?>(nil)
    future.whenComplete { completed in
        result.set(completed)
        done.signal()
    }
    guard done.wait(timeout: .now() + hangGuard) == .success else {
        return nil
    }
    return result.value
}

/// Whether `outcome` is a failure with `EventLoopError.shutdown`.
private func isShutdownFailure<Value>(_ outcome: Swift.Result<Value, any Error>?) -> Bool {
    guard case .failure(let error) = outcome else { return false }
    return error as? NIOCore.EventLoopError == .shutdown
}

@Suite("FlowNIO: a Flow loop as a SwiftNIO loop, across its shutdown", .checksLiveFutures)
struct FlowLoopShutdownTests {
    @Test("tasks still scheduled when the Flow loop shuts down fail with EventLoopError.shutdown")
    func pendingScheduledTasksFailOnShutdown() {
        let flowLoop = Flow.EventLoop.startOnNewThread(name: "flownio.shutdown")
        let nioLoop = flowLoop.nioEventLoop
        let fromOutside = nioLoop.scheduleTask(in: .hours(24)) {
            Issue.record("a task scheduled in 24 hours ran")
        }
        let fromInside = try? nioLoop.submit {
            nioLoop.scheduleTask(in: .hours(24)) { Issue.record("a task scheduled in 24 hours ran") }
        }.wait()
        let failure = nioLoop.makePromise(of: Void.self)
        fromOutside.futureResult.whenFailure { error in
            #expect(nioLoop.inEventLoop)
            failure.fail(error)
        }
        flowLoop.shutdown()
        #expect(isShutdownFailure(outcome(of: fromOutside.futureResult)))
        #expect(isShutdownFailure(outcome(of: failure.futureResult)))
        #expect(isShutdownFailure(fromInside.flatMap { outcome(of: $0.futureResult) }))
    }

    @Test("a task scheduled from the failure of one the shutdown failed fails too, and execute does not stop")
    func schedulingFromAShutdownFailure() {
        let flowLoop = Flow.EventLoop.startOnNewThread(name: "flownio.shutdown")
        let nioLoop = flowLoop.nioEventLoop
        let second = nioLoop.makePromise(of: Void.self)
        let executed = DispatchSemaphore(value: 0)
        nioLoop.scheduleTask(in: .hours(24)) {
            Issue.record("a task scheduled in 24 hours ran")
        }.futureResult.whenFailure { error in
            #expect(error as? NIOCore.EventLoopError == .shutdown)
            nioLoop.execute { executed.signal() }
            nioLoop.scheduleTask(in: .hours(24)) {
                Issue.record("a task scheduled in 24 hours ran")
            }.futureResult.cascade(to: second)
        }
        flowLoop.shutdown()
        #expect(isShutdownFailure(outcome(of: second.futureResult)))
        #expect(executed.wait(timeout: .now() + hangGuard) == .success)
    }

    @Test("on a shut-down loop a new task fails with EventLoopError.shutdown and execute runs work as the loop")
    func afterTheShutdown() {
        let flowLoop = Flow.EventLoop.startOnNewThread(name: "flownio.shutdown")
        let nioLoop = flowLoop.nioEventLoop
        flowLoop.shutdown()
        let late = nioLoop.scheduleTask(in: .milliseconds(1)) {
            Issue.record("a task scheduled on a shut-down loop ran")
        }
        #expect(isShutdownFailure(outcome(of: late.futureResult)))
        let submitted = nioLoop.submit { nioLoop.inEventLoop }
        guard case .success(let inEventLoop) = outcome(of: submitted) else {
            Issue.record("work submitted after the shutdown did not run")
            return
        }
        #expect(inEventLoop)
        #expect(!nioLoop.inEventLoop)
    }

    @Test("a cancelled task keeps its cancellation error across the shutdown, and a task that ran its value")
    func cancelledAndRunTasksAreNotFailedAgain() {
        let flowLoop = Flow.EventLoop.startOnNewThread(name: "flownio.shutdown")
        let nioLoop = flowLoop.nioEventLoop
        let cancelled = nioLoop.scheduleTask(in: .hours(24)) { 1 }
        cancelled.cancel()
        let ran = nioLoop.scheduleTask(in: .nanoseconds(0)) { 2 }
        guard case .success(let value) = outcome(of: ran.futureResult) else {
            Issue.record("the task did not run")
            flowLoop.shutdown()
            return
        }
        #expect(value == 2)
        flowLoop.shutdown()
        guard case .failure(let error) = outcome(of: cancelled.futureResult) else {
            Issue.record("the cancelled task did not fail")
            return
        }
        #expect(error as? NIOCore.EventLoopError == .cancelled)
    }

    @Test("tasks scheduled from many threads while the loop shuts down each end once: run, or failed")
    func schedulingWhileShuttingDown() {
        let flowLoop = Flow.EventLoop.startOnNewThread(name: "flownio.shutdown")
        let nioLoop = flowLoop.nioEventLoop
        let threads = 4
        let tasksPerThread = 200
        let ended = Shared(0)
        let wrongOutcomes = Shared(0)
        let allEnded = DispatchSemaphore(value: 0)
        let started = DispatchGroup()
        for thread in 0..<threads {
            started.enter()
            DispatchQueue.global().async {
                started.leave()
                for index in 0..<tasksPerThread {
                    let delay: TimeAmount = index % 2 == 0 ? .nanoseconds(0) : .hours(1)
                    nioLoop.scheduleTask(in: delay) { thread }.futureResult.whenComplete { result in
                        switch result {
                        case .success(let value) where value == thread: break
                        case .failure(let error) where error as? NIOCore.EventLoopError == .shutdown: break
                        default: wrongOutcomes.mutate { $0 += 1 }
                        }
                        if ended.mutate({ $0 += 1; return $0 }) == threads * tasksPerThread {
                            allEnded.signal()
                        }
                    }
                }
            }
        }
        started.wait()
        flowLoop.shutdown()
        #expect(allEnded.wait(timeout: .now() + hangGuard) == .success)
        #expect(ended.value == threads * tasksPerThread)
        #expect(wrongOutcomes.value == 0)
    }
}

/// An actor isolated to a NIO loop, as NIO's own executor tests write one.
actor LoopBoundCounter {
    nonisolated let unownedExecutor: UnownedSerialExecutor
    private let loop: any NIOCore.EventLoop
    private var count = 0

    init(loop: any NIOCore.EventLoop) {
        self.loop = loop
        unownedExecutor = loop.executor.asUnownedSerialExecutor()
    }

    /// Counts one more, and says whether it ran on the loop.
    func increment() -> (count: Int, inEventLoop: Bool) {
        count += 1
        return (count, loop.inEventLoop)
    }

    /// The count, read from code that runs on the loop without being the actor's own.
    nonisolated func countFromTheLoop() -> Int {
        assumeIsolated { $0.count }
    }
}

@Suite("FlowNIO: a Flow loop as a SwiftNIO serial executor", .checksLiveFutures)
struct FlowLoopAsNIOExecutorTests {
    @Test("the adapter is its own executor: the same object on every call")
    func executorIsStable() async throws {
        try await withFlowLoop { flowLoop async throws in
            let nioLoop = flowLoop.nioEventLoop
            #expect(nioLoop.executor as AnyObject === nioLoop)
            #expect(nioLoop.executor as AnyObject === nioLoop.executor as AnyObject)
        }
    }

    @Test("an actor on the adapter's executor runs on the Flow loop, and assumeIsolated holds in the loop's work")
    func actorOnTheAdapter() async throws {
        try await withFlowLoop { flowLoop async throws in
            let nioLoop = flowLoop.nioEventLoop
            let counter = LoopBoundCounter(loop: nioLoop)
            for expected in 1...3 {
                let (count, inEventLoop) = await counter.increment()
                #expect(count == expected)
                #expect(inEventLoop)
            }
            let seenFromTheLoop = try await nioLoop.submit { counter.countFromTheLoop() }.get()
            #expect(seenFromTheLoop == 3)
        }
    }

    @Test("makeSucceededVoidFuture on the loop gives the same future while one is held, as NIO's loops do")
    func succeededVoidFutureIsCachedOnTheLoop() async throws {
        try await withFlowLoop { flowLoop async throws in
            let nioLoop = flowLoop.nioEventLoop
            let outside = nioLoop.makeSucceededVoidFuture()
            let sameInside = try await nioLoop.submit {
                let first = nioLoop.makeSucceededVoidFuture()
                let second = nioLoop.makeSucceededFuture(())
                return first === second && first !== outside
            }.get()
            #expect(sameInside)
            #expect(outside !== nioLoop.makeSucceededVoidFuture())
        }
    }

    @Test("a repeated task with no delay, cancelled from another thread, stops, and execute still runs meanwhile")
    func zeroDelayRepeatedTaskCancelledFromAnotherThread() async throws {
        try await withFlowLoop { flowLoop async throws in
            let nioLoop = flowLoop.nioEventLoop
            let fired = DispatchSemaphore(value: 0)
            let hasFired = Shared(false)
            let isAllowedToFire = Shared(true)
            let repeated = nioLoop.scheduleRepeatedTask(initialDelay: .milliseconds(5), delay: .zero) { _ in
                #expect(isAllowedToFire.value)
                if !hasFired.value {
                    hasFired.value = true
                    fired.signal()
                }
            }
            #expect(fired.wait(timeout: .now() + hangGuard) == .success)
            // While the task repeats with no delay, work sent with execute must still run.
            let executed = DispatchSemaphore(value: 0)
            nioLoop.execute { executed.signal() }
            #expect(executed.wait(timeout: .now() + hangGuard) == .success)
            repeated.cancel()
            try await nioLoop.submit { isAllowedToFire.value = false }.get()
        }
    }
}
