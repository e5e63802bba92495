import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Flow

/// Runs `body` as work of a fresh serial scheduler, so that `Scheduler.current` is that scheduler:
/// a queue created inside starts its operations and delivers its results synchronously, and a test
/// can check each step without waiting.
private func onOwnScheduler<T>(_ label: String = "test.queue", _ body: (Scheduler) -> T) -> T {
    let scheduler = Scheduler(label: label)
    return scheduler.sync { body(scheduler) }
}

/// Operations whose futures the test completes, recording the order they started in and how many
/// ran at once.
private final class OperationGate: Sendable {
    let started = Shared([Int]())
    let running = Shared(0)
    let peak = Shared(0)
    private let pending = Shared([Int: Operation<Int>]())

    /// Starts operation `id`: a pending future completed by ``finish(_:with:)``.
    func operation(_ id: Int) -> Future<Int> {
        let operation = Operation<Int>(on: .none)
        started.mutate { $0.append(id) }
        let now = running.mutate { count -> Int in
            count += 1
            return count
        }
        peak.mutate { $0 = max($0, now) }
        pending.mutate { $0[id] = operation }
        return operation.future
    }

    /// The operation started as `id`, if it is still pending.
    func pendingOperation(_ id: Int) -> Operation<Int>? { pending.value[id] }

    /// Completes operation `id` (with its id as value, by default).
    func finish(_ id: Int, with result: Result<Int>? = nil) {
        guard let operation = pending.mutate({ $0.removeValue(forKey: id) }) else {
            Issue.record("operation \(id) is not running")
            return
        }
        running.mutate { $0 -= 1 }
        operation.complete(result ?? .success(id))
    }
}

/// A resource with an identity, to check that batches share it.
private final class SharedResource: Sendable {}

@Suite("FutureQueue")
struct FutureQueueTests {
    @Test("operations start in order, and at most maxConcurrentCount run at once")
    func runsInOrderWithinTheLimit() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue(maxConcurrentCount: 3)
            let delivered = Shared([Int]())
            for id in 0..<10 {
                queue.enqueue { gate.operation(id) }.onValue(on: .none) { value in delivered.mutate { $0.append(value) } }
            }
            #expect(gate.started.value == [0, 1, 2])
            #expect(queue.count == 10)

            gate.finish(1)
            #expect(gate.started.value == [0, 1, 2, 3])
            gate.finish(0)
            gate.finish(3)
            #expect(gate.started.value == [0, 1, 2, 3, 4, 5])
            for id in [2, 5, 4, 6, 7, 8, 9] {
                gate.finish(id)
            }
            #expect(gate.started.value == Array(0..<10))
            #expect(gate.peak.value == 3)
            #expect(delivered.value == [1, 0, 3, 2, 5, 4, 6, 7, 8, 9])
            #expect(queue.isEmpty)
        }
    }

    @Test("with the default maxConcurrentCount, each operation waits for the previous one's future")
    func serialByDefault() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            #expect(queue.maxConcurrentCount == 1)
            queue.enqueue { gate.operation(0) }
            queue.enqueue { gate.operation(1) }
            #expect(gate.started.value == [0])
            gate.finish(0)
            #expect(gate.started.value == [0, 1])
            gate.finish(1)
            #expect(gate.peak.value == 1)
        }
    }

    @Test("operations run on executeOn and results come back on the caller's scheduler")
    func schedulers() {
        let caller = Scheduler(label: "test.caller")
        let execution = Scheduler(label: "test.execution")
        let queue = FutureQueue(executeOn: execution)
        let checks = Shared([String: Bool]())
        let done = DispatchSemaphore(value: 0)
        caller.async {
            queue.enqueue { () -> Future<Int> in
                checks.mutate { $0["future operation on executeOn"] = execution.isExecuting }
                // Completes on yet another thread.
                return Future(on: .concurrentBackground) { completion in
                    completion(.success(1))
                    return NilDisposer()
                }
            }
            .onResult(on: .none) { _ in
                checks.mutate { $0["future result on caller"] = caller.isExecuting }
            }
            queue.enqueue { () -> Int in
                checks.mutate { $0["value operation on executeOn"] = execution.isExecuting }
                return 2
            }
            .onResult(on: .none) { _ in
                checks.mutate { $0["value result on caller"] = caller.isExecuting }
                done.signal()
            }
        }
        expectSignal(done, "the second result")
        #expect(checks.value.count == 4)
        #expect(checks.value.values.allSatisfy { $0 }, "\(checks.value)")
    }

    @Test("the plain-value enqueue completes with the value or the thrown error")
    func valueOperations() {
        onOwnScheduler { _ in
            let queue = FutureQueue()
            #expect(queue.enqueue { 42 }.result?.value == 42)
            let failed = queue.enqueue { () throws -> Int in throw TestError(code: 3) }
            #expect(failed.result?.error as? TestError == TestError(code: 3))
            let thrownBeforeAFuture = queue.enqueue { () throws -> Future<Int> in throw TestError(code: 4) }
            #expect(thrownBeforeAFuture.result?.error as? TestError == TestError(code: 4))
            #expect(queue.isEmpty)
        }
    }

    @Test("a queued operation cancelled before it started is removed and its closure is never called")
    func cancelledQueuedOperationNeverStarts() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            let closureCalls = Shared(0)
            queue.enqueue { gate.operation(0) }
            let cancelled = queue.enqueue { () -> Future<Int> in
                closureCalls.mutate { $0 += 1 }
                return gate.operation(1)
            }
            queue.enqueue { gate.operation(2) }
            #expect(queue.count == 3)

            cancelled.cancel()
            #expect(cancelled.result?.error as? FutureError == .aborted)
            #expect(queue.count == 2)

            gate.finish(0)
            #expect(gate.started.value == [0, 2])
            gate.finish(2)
            #expect(closureCalls.value == 0)
            #expect(queue.isEmpty)
        }
    }

    @Test("cancelling a running operation's future cancels the operation and frees its slot")
    func cancellingARunningOperation() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            let first = queue.enqueue { gate.operation(0) }
            queue.enqueue { gate.operation(1) }
            let operation = gate.pendingOperation(0)

            first.cancel()
            #expect(first.result?.error as? FutureError == .aborted)
            #expect(operation?.future.result?.error as? FutureError == .aborted)
            #expect(operation?.disposals.value == 1)
            #expect(gate.started.value == [0, 1])
            gate.finish(1)
            #expect(queue.isEmpty)
        }
    }

    @Test("a cancel on a future that has continuations is ignored, as for any future")
    func cancelWithContinuationIsIgnored() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            queue.enqueue { gate.operation(0) }
            let second = queue.enqueue { gate.operation(1) }
            let observed = second.map(on: .none) { $0 * 10 }
            expectDebugDiagnostic(containing: "was ignored: the future has continuations") { second.cancel() }
            gate.finish(0)
            gate.finish(1)
            #expect(observed.result?.value == 10)
        }
    }

    @Test("abortQueuedOperations fails the waiting and the running operations; the queue stays open")
    func abortWithoutClosing() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            let running = queue.enqueue { gate.operation(0) }
            let waiting = (1...2).map { id in queue.enqueue { gate.operation(id) } }

            queue.abortQueuedOperations(with: TestError(code: 7))
            for future in waiting {
                #expect(future.result?.error as? TestError == TestError(code: 7))
            }
            #expect(queue.closedError == nil)
            #expect(running.result?.error as? TestError == TestError(code: 7))
            #expect(gate.started.value == [0])
            #expect(queue.isEmpty)

            let later = queue.enqueue { gate.operation(3) }
            gate.finish(3)
            #expect(later.result?.value == 3)
            #expect(queue.isEmpty)
        }
    }

    @Test("with shouldCloseQueue, later operations fail with closedError and never run")
    func abortAndClose() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            queue.enqueue { gate.operation(0) }
            let waiting = queue.enqueue { gate.operation(1) }

            queue.abortQueuedOperations(with: TestError(code: 8), shouldCloseQueue: true)
            #expect(waiting.result?.error as? TestError == TestError(code: 8))
            #expect(queue.closedError as? TestError == TestError(code: 8))

            let closureCalls = Shared(0)
            let rejected = queue.enqueue { () -> Int in
                closureCalls.mutate { $0 += 1 }
                return 1
            }
            #expect(rejected.result?.error as? TestError == TestError(code: 8))
            #expect(closureCalls.value == 0)

            // A closed queue keeps its first error.
            queue.abortQueuedOperations(with: TestError(code: 9), shouldCloseQueue: true)
            #expect(queue.closedError as? TestError == TestError(code: 8))
            gate.finish(0)
            #expect(queue.isEmpty)
        }
    }

    @Test("a batch shares the resource and holds one slot of the outer queue until its operations are done")
    func batches() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let resource = SharedResource()
            let queue = FutureQueue(resource: resource, maxConcurrentCount: 2)
            let sharesResource = Shared(false)
            let batch = queue.enqueueBatch { batchQueue -> Future<String> in
                sharesResource.mutate { $0 = batchQueue.resource === resource }
                batchQueue.enqueue { gate.operation(10) }
                batchQueue.enqueue { gate.operation(11) }
                return Future("batch done")  // completed, but the batch's operations are not
            }
            queue.enqueue { gate.operation(20) }  // the second slot
            queue.enqueue { gate.operation(21) }  // waits for a slot
            #expect(sharesResource.value)
            #expect(gate.started.value == [10, 20])

            gate.finish(10)
            #expect(gate.started.value == [10, 20, 11])
            #expect(!batch.isCompleted)

            gate.finish(11)
            #expect(batch.result?.value == "batch done")
            #expect(gate.started.value == [10, 20, 11, 21])
            #expect(gate.peak.value == 2)
            gate.finish(20)
            gate.finish(21)
            #expect(queue.isEmpty)
        }
    }

    @Test("a batch waits for its own future too, and an abort reaches the operations in it")
    func batchFutureAndAbort() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            let inner = Shared<Future<Int>?>(nil)
            let batch = queue.enqueueBatch { batchQueue -> Future<Int> in
                batchQueue.enqueue { gate.operation(1) }
                inner.mutate { $0 = batchQueue.enqueue { gate.operation(2) } }
                return gate.operation(0)
            }
            let after = queue.enqueue { gate.operation(3) }
            #expect(gate.started.value == [1, 0])

            queue.abortQueuedOperations(with: TestError(code: 5))
            #expect(inner.value?.result?.error as? TestError == TestError(code: 5))
            #expect(after.result?.error as? TestError == TestError(code: 5))
            // The running batch and its running operation are aborted too, as in Flow.
            #expect(batch.result?.error as? TestError == TestError(code: 5))
            #expect(gate.started.value == [1, 0])
            #expect(queue.isEmpty)
        }
    }

    @Test("cancelling a running batch aborts the operations waiting in it and frees the slot")
    func cancellingABatch() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            let inner = Shared<Future<Int>?>(nil)
            let batch = queue.enqueueBatch { batchQueue -> Future<Void> in
                batchQueue.enqueue { gate.operation(1) }
                inner.mutate { $0 = batchQueue.enqueue { gate.operation(2) } }
                return Future()
            }
            queue.enqueue { gate.operation(3) }
            batch.cancel()
            #expect(batch.result?.error as? FutureError == .aborted)
            #expect(inner.value?.result?.error as? FutureError == .aborted)
            #expect(gate.started.value == [1, 3])
            gate.finish(1)
            gate.finish(3)
            #expect(gate.started.value == [1, 3])
            #expect(queue.isEmpty)
        }
    }

    @Test("onEmpty completes at once on an empty queue, else when the last operation finishes")
    func onEmpty() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue(maxConcurrentCount: 2)
            #expect(queue.isEmpty)
            #expect(queue.onEmpty.result != nil)

            for id in 0..<3 { queue.enqueue { gate.operation(id) } }
            let emptied = queue.onEmpty
            let cancelledWaiter = queue.onEmpty
            cancelledWaiter.cancel()
            #expect(!queue.isEmpty)
            gate.finish(0)
            gate.finish(1)
            #expect(!emptied.isCompleted)
            gate.finish(2)
            #expect(emptied.result?.value != nil)
            #expect(cancelledWaiter.result?.error as? FutureError == .aborted)
            #expect(queue.isEmpty)

            // Each read waits for the next time the queue empties.
            queue.enqueue { gate.operation(3) }
            let again = queue.onEmpty
            #expect(!again.isCompleted)
            gate.finish(3)
            #expect(again.isCompleted)
        }
    }

    @Test("the queue, its entries and every future are freed once the work is done or cancelled")
    func futuresAreFreed() {
        let count = LiveFutureCount()
        let weakQueue = Shared<WeakBox<FutureQueue<Void>>?>(nil)
        onOwnScheduler { _ in
            count.track {
                let gate = OperationGate()
                let queue = FutureQueue()
                weakQueue.mutate { $0 = WeakBox(queue) }
                queue.enqueue { gate.operation(0) }.map(on: .none) { $0 + 1 }.onValue(on: .none) { _ in }
                queue.enqueue { gate.operation(1) }.cancel()
                queue.enqueue { 2 }
                _ = queue.onEmpty
                gate.finish(0)
            }
        }
        #expect(count.value == 0)
        #expect(weakQueue.value?.object == nil)
    }

    @Test("a long run of operations that complete synchronously does not grow the stack")
    func longSynchronousRun() {
        onOwnScheduler { _ in
            let gate = OperationGate()
            let queue = FutureQueue()
            let completed = Shared(0)
            queue.enqueue { gate.operation(0) }
            for id in 1...50_000 {
                queue.enqueue { id }.onValue(on: .none) { _ in completed.mutate { $0 += 1 } }
            }
            gate.finish(0)
            #expect(completed.value == 50_000)
            #expect(queue.isEmpty)
        }
    }

    @Test("stress: 8 threads enqueue 10,000 operations each; all complete exactly once; the queue ends empty")
    func stress() {
        let threadCount = 8
        let perThread = 10_000
        let total = threadCount * perThread
        let maxConcurrent = 3
        let queue = FutureQueue(maxConcurrentCount: maxConcurrent, executeOn: Scheduler(label: "test.stress.execution"))
        let counters = StressCounters(total: total)
        let allDelivered = DispatchSemaphore(value: 0)
        let threadsDone = DispatchGroup()

        for thread in 0..<threadCount {
            threadsDone.enter()
            // Foundation's: this test module declares a `Thread` of its own.
            Foundation.Thread {
                for index in 0..<perThread {
                    let id = thread * perThread + index
                    // Operations the test cancels are left out of the running count: cancelling a running
                    // operation frees its slot at once, while its closure may still be finishing on
                    // another thread. The operations that hold a slot must never exceed the maximum.
                    let counted = !id.isMultiple(of: 7)
                    let future = queue.enqueue { () -> Future<Int> in
                        counters.recordCall(id)
                        if counted {
                            let now = counters.running.add(1, ordering: .relaxed).newValue
                            counters.peak.max(now, ordering: .relaxed)
                        }
                        if id.isMultiple(of: 2) {
                            if counted { counters.running.subtract(1, ordering: .relaxed) }
                            return Future(id)
                        }
                        // Completes on another thread than the ones enqueueing and executing.
                        return Future(on: .concurrentBackground) { completion in
                            if counted { counters.running.subtract(1, ordering: .relaxed) }
                            completion(.success(id))
                            return NilDisposer()
                        }
                    }
                    // Some callers cancel at once: those operations either never start or end aborted.
                    if id.isMultiple(of: 7) { future.cancel() }
                    future.onResult(on: .none) { result in
                        counters.recordDelivery(id)
                        switch result {
                        case .success(let value):
                            if value != id { counters.wrongValues.add(1, ordering: .relaxed) }
                        case .failure(let error):
                            if !id.isMultiple(of: 7) || error as? FutureError != .aborted {
                                counters.wrongValues.add(1, ordering: .relaxed)
                            }
                        }
                        if counters.delivered.add(1, ordering: .acquiringAndReleasing).newValue == total {
                            allDelivered.signal()
                        }
                    }
                }
                threadsDone.leave()
            }.start()
        }

        #expect(threadsDone.wait(timeout: .now() + hangGuard) == .success, "the enqueueing threads")
        expectSignal(allDelivered, "every result")
        let emptied = DispatchSemaphore(value: 0)
        queue.onEmpty.onValue(on: .none) { emptied.signal() }
        expectSignal(emptied, "the queue to become empty")

        #expect(counters.deliveryCounts.allSatisfy { $0 == 1 })
        #expect(counters.wrongValues.load(ordering: .relaxed) == 0)
        let calls = counters.calls
        #expect(calls.allSatisfy { $0 <= 1 })
        #expect(calls.enumerated().allSatisfy { $0.element == 1 || $0.offset.isMultiple(of: 7) })
        #expect(counters.peak.load(ordering: .relaxed) <= maxConcurrent)
        #expect(queue.isEmpty)
        #expect(queue.count == 0)
    }

    @Test("maxConcurrentCount below 1 stops the program with a clear message")
    func invalidMaxConcurrentCount() async {
        await #expect(processExitsWith: .failure) {
            _ = FutureQueue(maxConcurrentCount: 0)
        }
    }
}

/// A weak reference, to check that an object was freed.
private final class WeakBox<Object: AnyObject & Sendable>: Sendable {
    private struct Reference {
        weak var object: Object?
    }

    private let reference: Synchronization.Mutex<Reference>

    init(_ object: Object) { reference = Synchronization.Mutex(Reference(object: object)) }

    var object: Object? { reference.withLock { $0.object } }
}

/// Counters updated from many threads at once.
///
/// Per-operation counts use the library's `FutureLock` rather than `Shared` (a `Mutex`): ThreadSanitizer
/// does not see the prebuilt `Mutex`'s synchronisation on Linux and would report false races.
private final class StressCounters: @unchecked Sendable {
    // @unchecked Sendable: `closureCalls` and `deliveries` are guarded by `lock`; the rest is atomic.
    let running = Atomic<Int>(0)
    let peak = Atomic<Int>(0)
    let delivered = Atomic<Int>(0)
    let wrongValues = Atomic<Int>(0)
    private let lock = FutureLock()
    private var closureCalls: [UInt8]
    private var deliveries: [UInt8]

    init(total: Int) {
        closureCalls = Array(repeating: 0, count: total)
        deliveries = Array(repeating: 0, count: total)
    }

    func recordCall(_ id: Int) { lock.withLock { closureCalls[id] += 1 } }
    func recordDelivery(_ id: Int) { lock.withLock { deliveries[id] += 1 } }
    var calls: [UInt8] { lock.withLock { closureCalls } }
    var deliveryCounts: [UInt8] { lock.withLock { deliveries } }
}

@Suite("FutureQueue state machine")
struct FutureQueueStateMachineTests {
    typealias Machine = FutureQueueStateMachine<String, String>

    @Test("starts operations while slots are free, then hands out tickets in order")
    func enqueueStartsThenWaits() {
        var machine = Machine(maxConcurrentCount: 2)
        #expect(machine.isEmpty)
        guard case .start("a") = machine.enqueue("a") else { Issue.record("a should start"); return }
        guard case .start("b") = machine.enqueue("b") else { Issue.record("b should start"); return }
        guard case .wait(let first) = machine.enqueue("c"),
              case .wait(let second) = machine.enqueue("d")
        else { Issue.record("c and d should wait"); return }
        #expect(first < second)
        #expect(machine.runningCount == 2)
        #expect(machine.waitingCount == 2)
        #expect(!machine.isEmpty)
    }

    @Test("a finished operation's slot goes to the oldest waiting one, skipping removed ones")
    func finishStartsTheOldestWaiting() {
        var machine = Machine(maxConcurrentCount: 1)
        _ = machine.enqueue("a")
        _ = machine.enqueue("b")
        guard case .wait(let ticketC) = machine.enqueue("c") else { Issue.record("c should wait"); return }
        _ = machine.enqueue("d")

        #expect(machine.removeWaiting(ticketC) == "c")
        #expect(machine.removeWaiting(ticketC) == nil)
        guard case .start("b") = machine.operationDidFinish() else { Issue.record("b should start"); return }
        guard case .start("d") = machine.operationDidFinish() else { Issue.record("d should start"); return }
        #expect(machine.runningCount == 1)
        guard case .becameEmpty(let waiters) = machine.operationDidFinish() else {
            Issue.record("the queue should be empty")
            return
        }
        #expect(waiters.isEmpty)
        #expect(machine.isEmpty)
    }

    @Test("a started operation's ticket can no longer remove anything")
    func startedTicketIsStale() {
        var machine = Machine(maxConcurrentCount: 1)
        _ = machine.enqueue("a")
        guard case .wait(let ticket) = machine.enqueue("b") else { Issue.record("b should wait"); return }
        _ = machine.operationDidFinish()
        #expect(machine.removeWaiting(ticket) == nil)
        #expect(machine.runningCount == 1)
    }

    @Test("empty waiters are handed back, in order, when the last operation finishes")
    func emptyWaiters() {
        var machine = Machine(maxConcurrentCount: 2)
        #expect(machine.waitUntilEmpty("now") == .emptyNow)
        _ = machine.enqueue("a")
        _ = machine.enqueue("b")
        guard case .wait = machine.waitUntilEmpty("first"),
              case .wait(let cancelled) = machine.waitUntilEmpty("cancelled"),
              case .wait = machine.waitUntilEmpty("last")
        else { Issue.record("waiters should wait"); return }
        #expect(machine.removeEmptyWaiter(cancelled) == "cancelled")
        guard case .none = machine.operationDidFinish() else { Issue.record("b still runs"); return }
        guard case .becameEmpty(let waiters) = machine.operationDidFinish() else {
            Issue.record("the queue should be empty")
            return
        }
        #expect(waiters == ["first", "last"])
        #expect(machine.removeEmptyWaiter(cancelled) == nil)
    }

    @Test("abortWaiting returns the waiting operations in order and leaves running ones")
    func abortWaiting() {
        var machine = Machine(maxConcurrentCount: 1)
        _ = machine.enqueue("a")
        _ = machine.enqueue("b")
        guard case .wait(let ticketC) = machine.enqueue("c") else { Issue.record("c should wait"); return }
        _ = machine.enqueue("d")
        _ = machine.removeWaiting(ticketC)

        #expect(machine.abortWaiting(with: TestError(), closing: false) == ["b", "d"])
        #expect(machine.runningCount == 1)
        #expect(machine.closedError == nil)
        guard case .wait = machine.enqueue("e") else { Issue.record("e should wait"); return }
        guard case .start("e") = machine.operationDidFinish() else { Issue.record("e should start"); return }
    }

    @Test("a closed machine rejects new operations with its first error")
    func closing() {
        var machine = Machine(maxConcurrentCount: 1)
        _ = machine.enqueue("a")
        _ = machine.enqueue("b")
        #expect(machine.abortWaiting(with: TestError(code: 1), closing: true) == ["b"])
        #expect(machine.abortWaiting(with: TestError(code: 2), closing: true).isEmpty)
        #expect(machine.closedError as? TestError == TestError(code: 1))
        guard case .reject(let error) = machine.enqueue("c") else { Issue.record("c should be rejected"); return }
        #expect(error as? TestError == TestError(code: 1))
        guard case .becameEmpty = machine.operationDidFinish() else { Issue.record("a was the last"); return }
    }

    @Test("many removed tickets are skipped in one finish")
    func skipsManyRemovedTickets() {
        var machine = FutureQueueStateMachine<Int, Never>(maxConcurrentCount: 1)
        _ = machine.enqueue(0)
        var tickets: [UInt64] = []
        for value in 1...1_000 {
            if case .wait(let ticket) = machine.enqueue(value) { tickets.append(ticket) }
        }
        for ticket in tickets.dropLast() { _ = machine.removeWaiting(ticket) }
        guard case .start(1_000) = machine.operationDidFinish() else { Issue.record("1000 should start"); return }
        #expect(machine.waitingCount == 0)
    }
}
