import Flow
import FlowTesting
import FlowTestSupport
import Testing

/// `abortQueuedOperations(with:shouldCloseQueue:)` as Flow documents it: "abort all non completed
/// enqueued futures", the running ones included.
@Suite("FutureQueue abort, as in Flow")
struct FutureQueueAbortTests {
    @Test("aborting fails the running operation with the error and disposes its future's disposable")
    func abortReachesTheRunningOperation() {
        let clock = VirtualTimeScheduler()
        clock.scheduler.sync {
            let queue = FutureQueue()
            let operation = Operation<Int>(on: .none)
            let running = queue.enqueue { operation.future }
            #expect(operation.starts.value == 1)

            queue.abortQueuedOperations(with: TestError(code: 3))
            clock.runUntilIdle()
            #expect(running.result?.error as? TestError == TestError(code: 3))
            #expect(operation.disposals.value == 1)
            #expect(queue.isEmpty)
            #expect(queue.closedError == nil)

            // The freed slot serves what comes next.
            let next = queue.enqueue { 4 }
            clock.runUntilIdle()
            #expect(next.result?.value == 4)
        }
    }

    @Test("an operation whose start was scheduled but has not run yet never runs once aborted")
    func abortBeforeTheScheduledStart() {
        let clock = VirtualTimeScheduler()
        clock.scheduler.sync {
            // Starts operations only when the test says so.
            let pendingStarts = Shared([@Sendable () -> Void]())
            let starter = Scheduler(
                identifyingObject: pendingStarts,
                async: { work in pendingStarts.mutate { $0.append(work) } },
                sync: { work in work() })
            let queue = FutureQueue(executeOn: starter)
            let calls = Shared(0)
            let aborted = queue.enqueue { () -> Int in
                calls.mutate { $0 += 1 }
                return 1
            }
            #expect(pendingStarts.value.count == 1)
            queue.abortQueuedOperations(with: TestError(code: 5))
            let starts = pendingStarts.mutate { starts -> [@Sendable () -> Void] in
                defer { starts = [] }
                return starts
            }
            for start in starts { start() }
            clock.runUntilIdle()
            #expect(calls.value == 0)
            #expect(aborted.result?.error as? TestError == TestError(code: 5))
            #expect(queue.isEmpty)
        }
    }

    @Test("the futures fail in the order their operations were enqueued, running ones first, and no waiting one starts")
    func abortOrder() {
        let clock = VirtualTimeScheduler()
        clock.scheduler.sync {
            let queue = FutureQueue(maxConcurrentCount: 2)
            let operations = Shared([Int: Operation<Int>]())
            let failed = Shared([Int]())
            for index in 0..<4 {
                queue.enqueue { () -> Future<Int> in
                    let operation = Operation<Int>(on: .none)
                    operations.mutate { $0[index] = operation }
                    return operation.future
                }
                .onError(on: .none) { _ in failed.mutate { $0.append(index) } }
            }
            clock.runUntilIdle()
            #expect(operations.value.keys.sorted() == [0, 1])

            queue.abortQueuedOperations(with: TestError(code: 6), shouldCloseQueue: true)
            clock.runUntilIdle()
            #expect(failed.value == [0, 1, 2, 3])
            #expect(operations.value.keys.sorted() == [0, 1])
            #expect(operations.value.values.map { $0.disposals.value } == [1, 1])
            #expect(queue.isEmpty)
        }
    }

    @Test("an operation whose future nobody keeps (it dropped its completion) is still aborted")
    func abortReachesAnUnreferencedOperation() {
        let clock = VirtualTimeScheduler()
        // The operation drops its completion on purpose: debug builds report that, once.
        expectDebugDiagnostic(containing: "released its completion callback without calling it") {
            clock.scheduler.sync {
                let queue = FutureQueue()
                let disposals = Shared(0)
                let running = queue.enqueue {
                    Future<Int>(on: .none) { _ in Disposer { disposals.mutate { $0 += 1 } } }
                }
                clock.runUntilIdle()
                queue.abortQueuedOperations(with: TestError(code: 8))
                clock.runUntilIdle()
                #expect(running.result?.error as? TestError == TestError(code: 8))
                #expect(disposals.value == 1)
                #expect(queue.isEmpty)
            }
        }
    }

    @Test("an operation completing after the abort changes nothing")
    func lateCompletionIsIgnored() {
        let clock = VirtualTimeScheduler()
        clock.scheduler.sync {
            let queue = FutureQueue()
            let operation = Operation<Int>(on: .none)
            let running = queue.enqueue { operation.future }
            let later = queue.enqueue { 2 }
            queue.abortQueuedOperations(with: TestError(code: 7))
            operation.succeed(1)  // the operation let go of its callback when disposed
            clock.runUntilIdle()
            #expect(running.result?.error as? TestError == TestError(code: 7))
            #expect(later.result?.error as? TestError == TestError(code: 7))
            #expect(queue.isEmpty)
        }
    }
}
