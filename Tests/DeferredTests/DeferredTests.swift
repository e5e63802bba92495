import Deferred
import Dispatch
import Foundation
import Testing

@Suite("Deferred")
struct DeferredTests {
    @Test("a new Deferred is not filled, and peek returns nil")
    func newDeferredIsEmpty() {
        let deferred = Deferred<Int>()
        #expect(!deferred.isFilled)
        #expect(deferred.peek() == nil)
    }

    @Test("init(filledWith:) gives a filled Deferred")
    func filledWith() {
        let deferred = Deferred(filledWith: 7)
        #expect(deferred.isFilled)
        #expect(deferred.peek() == 7)
    }

    @Test("the first fill wins and later fills return false and change nothing")
    func firstFillWins() {
        let deferred = Deferred<String>()
        #expect(deferred.fill(with: "first"))
        #expect(!deferred.fill(with: "second"))
        #expect(deferred.peek() == "first")
    }

    @Test("copies of a Deferred share one value")
    func copiesShareValue() {
        let original = Deferred<Int>()
        let copy = original
        copy.fill(with: 3)
        #expect(original.peek() == 3)
    }

    @Test("fill() fills a Deferred of Void")
    func fillVoid() {
        let deferred = Deferred<Void>()
        #expect(deferred.fill())
        #expect(!deferred.fill())
        #expect(deferred.isFilled)
    }

    @Test("a Deferred of an optional filled with nil counts as filled")
    func optionalNilIsFilled() {
        let deferred = Deferred<Int?>()
        deferred.fill(with: nil)
        #expect(deferred.isFilled)
        #expect(deferred.peek() == .some(nil))
    }

    @Test("mustFill(with:) fills an empty Deferred")
    func mustFillFills() {
        let deferred = Deferred<Int>()
        deferred.mustFill(with: 1)
        #expect(deferred.peek() == 1)
    }

    @Test("mustFill(with:) stops the program when the Deferred was filled already")
    func mustFillTrapsWhenFilled() async {
        await #expect(processExitsWith: .failure) {
            let deferred = Deferred(filledWith: 1)
            deferred.mustFill(with: 2)
        }
    }

    @Test("of two racing fills exactly one returns true, over a million races")
    func fillIsAnAtomicOnce() {
        let batchSize = 10_000
        let batchCount = 100
        var lostRaces = 0
        var doubleWins = 0
        var wrongValues = 0
        for _ in 0..<batchCount {
            let batch = (0..<batchSize).map { _ in Deferred<String>() }
            let wins = (0..<2).map { _ in Shared([Bool](repeating: false, count: batchSize)) }
            let values = ["left", "right"]
            DispatchQueue.concurrentPerform(iterations: 2) { racer in
                var won = [Bool](repeating: false, count: batchSize)
                for index in 0..<batchSize {
                    won[index] = batch[index].fill(with: values[racer])
                }
                wins[racer].mutate { [won] in $0 = won }
            }
            let left = wins[0].value
            let right = wins[1].value
            for index in 0..<batchSize {
                switch (left[index], right[index]) {
                case (true, true): doubleWins += 1
                case (false, false): lostRaces += 1
                case (true, false): if batch[index].peek() != "left" { wrongValues += 1 }
                case (false, true): if batch[index].peek() != "right" { wrongValues += 1 }
                }
            }
        }
        #expect(doubleWins == 0)
        #expect(lostRaces == 0)
        #expect(wrongValues == 0)
    }

    @Test("upon runs the closure with the value once filled")
    func uponRunsAfterFill() {
        let deferred = Deferred<Int>()
        let ran = DispatchSemaphore(value: 0)
        let seen = Shared<Int?>(nil)
        deferred.upon(DispatchQueue.global()) { value in
            seen.mutate { $0 = value }
            ran.signal()
        }
        #expect(seen.value == nil)
        deferred.fill(with: 5)
        expectSignal(ran, "the upon closure")
        #expect(seen.value == 5)
    }

    @Test("upon on a filled Deferred submits the closure at once")
    func uponAfterFill() {
        let executor = CountingInlineExecutor()
        let seen = Shared<Int?>(nil)
        Deferred(filledWith: 9).upon(executor) { value in seen.mutate { $0 = value } }
        #expect(executor.submissionCount == 1)
        #expect(seen.value == 9)
    }

    @Test("upon closures run in the order registered on a serial queue")
    func uponOrderOnSerialQueue() {
        let deferred = Deferred<Int>()
        let queue = DispatchQueue(label: "upon order")
        let order = Shared<[Int]>([])
        let done = DispatchSemaphore(value: 0)
        for index in 0..<1_000 {
            deferred.upon(queue) { _ in
                order.mutate { $0.append(index) }
                if index == 999 { done.signal() }
            }
        }
        deferred.fill(with: 0)
        expectSignal(done, "the last upon closure")
        #expect(order.value == Array(0..<1_000))
    }

    @Test("closures registered while a fill submits earlier ones still run after them")
    func uponDuringFillKeepsOrder() {
        let deferred = Deferred<Int>()
        let queue = DispatchQueue(label: "upon order during fill")
        let order = Shared<[Int]>([])
        let submitting = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let gate = GateExecutor(target: queue, submitting: submitting, proceed: proceed)
        let done = DispatchSemaphore(value: 0)
        let record: @Sendable (Int) -> Void = { index in
            order.mutate { $0.append(index) }
            if index == 20 { done.signal() }
        }
        deferred.upon(gate) { _ in record(0) }
        for index in 1...10 {
            deferred.upon(queue) { _ in record(index) }
        }
        let filler = Thread { deferred.fill(with: 1) }
        filler.start()
        expectSignal(submitting, "the fill to start submitting")
        #expect(deferred.isFilled)
        for index in 11...20 {
            deferred.upon(queue) { _ in record(index) }
        }
        proceed.signal()
        expectSignal(done, "the last upon closure")
        #expect(order.value == Array(0...20))
    }

    @Test("closures of a Deferred that is never filled are released with it")
    func neverFilledReleasesClosures() {
        weak var weakTracker: LifetimeTracker?
        do {
            let deferred = Deferred<Int>()
            let tracker = LifetimeTracker()
            weakTracker = tracker
            deferred.upon(DispatchQueue.global()) { _ in withExtendedLifetime(tracker) {} }
            deferred.upon(DispatchQueue.global()) { _ in withExtendedLifetime(tracker) {} }
            #expect(weakTracker != nil)
        }
        #expect(weakTracker == nil)
    }

    @Test("closures are released once they ran, while the Deferred lives on")
    func closuresReleasedAfterRunning() {
        let deferred = Deferred<Int>()
        weak var weakTracker: LifetimeTracker?
        do {
            let tracker = LifetimeTracker()
            weakTracker = tracker
            deferred.upon(CountingInlineExecutor()) { _ in withExtendedLifetime(tracker) {} }
            deferred.upon(CountingInlineExecutor()) { _ in withExtendedLifetime(tracker) {} }
        }
        #expect(weakTracker != nil)
        deferred.fill(with: 1)
        #expect(weakTracker == nil)
        #expect(deferred.peek() == 1)
    }

    @Test("a Deferred that is dropped unfilled is freed")
    func droppedDeferredIsFreed() {
        weak var weakDeferred: Deferred<Int>?
        do {
            let deferred = Deferred<Int>()
            weakDeferred = deferred
            deferred.upon(DispatchQueue.global()) { _ in }
        }
        #expect(weakDeferred == nil)
    }

    @Test("wait(until:) returns the value filled from another thread")
    func waitReturnsValue() {
        let deferred = Deferred<Int>()
        DispatchQueue.global().async { deferred.fill(with: 4) }
        #expect(deferred.wait(until: .now() + hangGuard) == 4)
    }

    @Test("wait(until:) returns nil at the deadline when nothing fills the Deferred")
    func waitTimesOut() {
        #expect(Deferred<Int>().wait(until: .now()) == nil)
        #expect(Deferred<Int>().wait(until: .now() + .milliseconds(10)) == nil)
    }

    @Test("the debug description shows the value or says it is not filled")
    func debugDescription() {
        #expect(Deferred(filledWith: 42).debugDescription == "Deferred(42)")
        #expect(Deferred<Int>().debugDescription == "Deferred(not filled)")
        #expect(Future(value: "hi").debugDescription == "Future(\"hi\")")
    }
}

/// Forwards closures to `target`, but holds the first submission until told to go on: so that a test
/// can act while a fill is in the middle of submitting closures.
final class GateExecutor: Executor, Sendable {
    private let target: DispatchQueue
    private let submitting: DispatchSemaphore
    private let proceed: DispatchSemaphore

    init(target: DispatchQueue, submitting: DispatchSemaphore, proceed: DispatchSemaphore) {
        self.target = target
        self.submitting = submitting
        self.proceed = proceed
    }

    func submit(_ body: @escaping @Sendable () -> Void) {
        submitting.signal()
        _ = proceed.wait(timeout: .now() + hangGuard)
        target.async(execute: body)
    }
}
