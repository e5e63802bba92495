import Deferred
import Dispatch
import Foundation
import Testing

/// `upon` to a Dispatch queue: the path that hands the closure to `async` directly, whether the queue
/// is given as a `DispatchQueue` or as `any Executor`.
@Suite("upon to a Dispatch queue")
struct UponQueueTests {
    @Test("the closure runs on the queue given, before and after the fill, from a Deferred or a Future")
    func runsOnTheQueue() {
        let queue = DispatchQueue(label: "upon queue")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 1)
        let onQueue = Shared<[Bool]>([])
        let ran = DispatchSemaphore(value: 0)
        let record: @Sendable (Int) -> Void = { _ in
            onQueue.mutate { $0.append(DispatchQueue.getSpecific(key: key) == 1) }
            ran.signal()
        }
        let deferred = Deferred<Int>()
        deferred.upon(queue, execute: record)
        deferred.upon(queue as any Executor, execute: record)
        Future(deferred).upon(queue, execute: record)
        deferred.fill(with: 1)
        deferred.upon(queue, execute: record)
        deferred.upon(queue as any Executor, execute: record)
        Future(deferred).upon(queue, execute: record)
        Future(value: 1).upon(queue, execute: record)
        expectSignals(ran, count: 7, "the closures on the queue")
        #expect(onQueue.value == Array(repeating: true, count: 7))
    }

    @Test("closures given as a DispatchQueue or as any Executor keep their order across a fill")
    func orderAcrossFill() {
        let deferred = Deferred<Int>()
        let queue = DispatchQueue(label: "upon queue order")
        let order = Shared<[Int]>([])
        let submitting = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let filled = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let last = 300
        let register: @Sendable (Int) -> Void = { index in
            let body: @Sendable (Int) -> Void = { _ in
                order.mutate { $0.append(index) }
                if index == last { done.signal() }
            }
            switch index % 3 {
            case 0: deferred.upon(queue, execute: body)
            case 1: deferred.upon(queue as any Executor, execute: body)
            default: Future(deferred).upon(queue, execute: body)
            }
        }
        // The gate holds the fill inside its first submission, so that the next closures are given
        // while the filling thread still has closures to submit.
        deferred.upon(GateExecutor(target: queue, submitting: submitting, proceed: proceed)) { _ in
            order.mutate { $0.append(0) }
        }
        for index in 1...100 {
            register(index)
        }
        Thread {
            deferred.fill(with: 1)
            filled.signal()
        }.start()
        expectSignal(submitting, "the fill to start submitting")
        for index in 101...200 {
            register(index)
        }
        proceed.signal()
        expectSignal(filled, "the fill to return")
        for index in 201...last {
            register(index)
        }
        expectSignal(done, "the last closure")
        #expect(order.value == Array(0...last))
    }

    @Test("a closure given to a queue is released once it ran, filled before or after")
    func closureReleasedAfterRunning() {
        let queue = DispatchQueue(label: "upon queue release")
        let deferred = Deferred<Int>()
        weak var weakPending: LifetimeTracker?
        weak var weakFilled: LifetimeTracker?
        do {
            let pending = LifetimeTracker()
            weakPending = pending
            deferred.upon(queue) { _ in withExtendedLifetime(pending) {} }
        }
        #expect(weakPending != nil)
        deferred.fill(with: 1)
        do {
            let filled = LifetimeTracker()
            weakFilled = filled
            deferred.upon(queue as any Executor) { _ in withExtendedLifetime(filled) {} }
        }
        // Dispatch releases a block right after it ran, before it takes the next one.
        queue.sync {}
        #expect(weakPending == nil)
        #expect(weakFilled == nil)
    }
}
