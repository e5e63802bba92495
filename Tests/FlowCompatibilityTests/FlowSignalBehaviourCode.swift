// Signal behaviours Flow's own tests pin (recursion, sharing, start(with:), readable transforms),
// written as Flow code writes them, in Swift 5 mode: captured `var`s, values sent from callbacks.
import Dispatch
import Flow
import XCTest

final class FlowSignalBehaviourCodeTests: XCTestCase {
    func testTakeWithValuesSentFromTheCallback() {
        let callbacker = Callbacker<Int>()
        var result = [Int]()
        let bag = DisposeBag()
        bag += Signal(callbacker: callbacker).take(first: 4).onValue { value in
            result.append(value)
            callbacker.callAll(with: value + 1)
        }
        callbacker.callAll(with: 1)
        XCTAssertEqual(result, [1, 2, 3, 4])
        bag.dispose()
    }

    func testCombineLatestWrittenFromItsOwnCallback() {
        let first = ReadWriteSignal(0)
        let second = ReadWriteSignal(10)
        var sums = [Int]()
        let bag = DisposeBag()
        bag += combineLatest(first, second).atOnce().take(first: 5).onValue { a, b in
            sums.append(a + b)
            first.value += 1
            second.value += 10
        }
        XCTAssertEqual(sums, [10, 11, 12, 13, 14])
        bag.dispose()
    }

    func testCombineLatestOfTakesWrittenFromItsOwnCallback() {
        let first = ReadWriteSignal(0)
        let second = ReadWriteSignal(10)
        var sums = [Int]()
        let bag = DisposeBag()
        bag += combineLatest(first.atOnce().take(first: 3), second.atOnce().take(first: 3)).onValue { a, b in
            sums.append(a + b)
            first.value += 1
            second.value += 10
        }
        XCTAssertEqual(sums, [10, 11, 12])
        bag.dispose()
    }

    func testStartWithOrder() {
        let property = ReadWriteSignal(0)
        let bag = DisposeBag()
        var values = [Int]()
        bag += property.map { $0 + 2 }.start(with: 2).start(with: 1).map { $0 * 2 }.onValue { values.append($0) }
        XCTAssertEqual(values, [2, 4])
        property.value = 1
        XCTAssertEqual(values, [2, 4, 6])
        bag.dispose()
    }

    func testReusingAStartWithSignal() {
        let property = ReadWriteSignal(0)
        let bag = DisposeBag()
        let signal = property.map { $0 + 2 }.start(with: 1).start(with: 2)
        var total = 0
        bag += signal.onValue { total += $0 * 2 }
        bag += signal.onValue { total += $0 * 3 }
        XCTAssertEqual(total, 2 + 4 + 3 + 6)
        property.value = 1
        XCTAssertEqual(total, 2 + 4 + 3 + 6 + 6 + 9)
        bag.dispose()

        total = 0
        property.value = 0
        bag += signal.onValue { total += $0 * 2 }
        bag += signal.onValue { total += $0 * 3 }
        XCTAssertEqual(total, 2 + 4 + 3 + 6)
        bag.dispose()
    }

    func testReadableInitialThenAtOnce() {
        var result = [Int]()
        let bag = DisposeBag()
        bag += [1, 2, 3].signal().plain().readable(initial: 0).atOnce().onValue { result.append($0) }
        XCTAssertEqual(result, [0, 1, 2, 3])
        bag.dispose()
    }

    func testAtOnceListenedTwice() {
        let property = ReadWriteSignal(1)
        let bag = DisposeBag()
        var total = 0
        let signal = property.atOnce()
        bag += signal.onValue { total += $0 }
        property.value = 2
        bag += signal.onValue { total += $0 }
        XCTAssertEqual(total, 1 + 2 + 2)
        bag.dispose()
    }

    func testAtOnceInsideAListener() {
        let outer = ReadWriteSignal(0)
        let bag = DisposeBag()
        var total = 0
        bag += outer.onValue { value in
            let inner = ReadWriteSignal(1)
            XCTAssertEqual(total, 0)
            bag += inner.atOnce().onValue { total += $0 }
            XCTAssertEqual(total, 1)
            total += value
        }
        outer.value = 1
        XCTAssertEqual(total, 2)
        bag.dispose()
    }

    func testDistinctOfAReadableSignal() {
        let property = ReadWriteSignal(1)
        let bag = DisposeBag()
        var total = 0
        let signal = property.distinct()
        bag += signal.atOnce().onValue { total += $0 }
        for value in [1, 1, 2, 2, 3] {
            property.value = value
            XCTAssertEqual(signal.value, value)
        }
        XCTAssertEqual(total, 1 + 2 + 3)
        bag.dispose()
    }

    func testCombineLatestMappedWhileWritingTheFirstSignal() {
        let a = ReadWriteSignal(1)
        let b = ReadWriteSignal(10)
        var result = [Int]()
        let bag = DisposeBag()
        bag += combineLatest(a, b).map { first, second -> (Int, Int) in
            if first == 1 { a.value = 2 }
            return (first, second)
        }.atOnce().onValue { first, second in
            result.append(first)
            result.append(second)
        }
        XCTAssertEqual(result, [1, 10, 2, 10])
        bag.dispose()
    }

    func testCombineLatestMappedWhileWritingTheSecondSignal() {
        let a = ReadWriteSignal(1)
        let b = ReadWriteSignal(10)
        var result = [Int]()
        let bag = DisposeBag()
        bag += combineLatest(a, b).map { first, second -> (Int, Int) in
            if second == 10 { b.value = 20 }
            return (first, second)
        }.atOnce().onValue { first, second in
            result.append(first)
            result.append(second)
        }
        XCTAssertEqual(result, [1, 10, 1, 20])
        bag.dispose()
    }

    func testSharedReadSignalRunsItsProducerOnce() {
        final class Model {
            var starts = 0
        }
        let callbacker = Callbacker<Int>()
        let model = Model()
        // A `capturing:` autoclosure is @Sendable: it reads a property (here of a plain class) without
        // a warning in Swift 5 mode; a captured local `var` would warn.
        let signal = ReadSignal(capturing: model.starts) { callback -> Disposable in
            model.starts += 1
            return callbacker.addCallback(callback)
        }
        var first = 0
        var second = 0
        let bag = DisposeBag()
        bag += signal.atOnce().onValue { _ in first += 1 }
        bag += signal.atOnce().onValue { _ in second += 1 }
        callbacker.callAll(with: 1)
        callbacker.callAll(with: 2)
        XCTAssertEqual(model.starts, 1)
        XCTAssertEqual(first, 3)
        XCTAssertEqual(second, 3)
        bag.dispose()
    }

    func testSharedSignalRemovingAndAddingListeners() {
        let callbacker = Callbacker<Int>()
        var starts = 0
        let signal = Signal<Int> { callback in
            starts += 1
            return callbacker.addCallback(callback)
        }
        var s1 = 0, s2 = 0, s3 = 0, s4 = 0
        let d1 = signal.onValue { s1 += $0 }
        let d2 = signal.onValue { s2 += $0 }
        callbacker.callAll(with: 1)
        callbacker.callAll(with: 2)
        XCTAssertEqual(starts, 1)
        d2.dispose()
        callbacker.callAll(with: 3)
        let d3 = signal.onValue { s3 += $0 }
        callbacker.callAll(with: 4)
        d1.dispose()
        callbacker.callAll(with: 5)
        XCTAssertEqual(starts, 1)
        d3.dispose()
        callbacker.callAll(with: 6)
        let d4 = signal.onValue { s4 += $0 }
        callbacker.callAll(with: 7)
        XCTAssertEqual(starts, 2)
        XCTAssertEqual([s1, s2, s3, s4], [1 + 2 + 3 + 4, 1 + 2, 4 + 5, 7])
        d4.dispose()
    }

    func testCombinedLatestOfAnEmptySequence() {
        var called = false
        let bag = DisposeBag()
        bag += combineLatest([] as [ReadSignal<Int>]).atOnce().onValue { _ in called = true }
        XCTAssertTrue(called)
        bag.dispose()
    }

    func testTakeThenCollectReleasesTheClosures() {
        final class Object {}
        weak var weakFirst: Object?
        weak var weakSecond: Object?
        let bag = DisposeBag()
        do {
            let first = Object()
            let second = Object()
            weakFirst = first
            weakSecond = second
            bag += [1, 2, 3, 4].signal().atValue { _ in _ = first }.take(first: 2).collect().onValue { values in
                _ = second
                XCTAssertEqual(values, [1, 2])
            }
        }
        XCTAssertNil(weakFirst)
        XCTAssertNil(weakSecond)
        bag.dispose()
    }
    func testAValueSentFromACallbackWaitsForIt() {
        let callbacker = Callbacker<Int>()
        var result = [Int]()
        let bag = DisposeBag()
        bag += Signal(callbacker: callbacker).take(first: 2).onValue { value in
            result.append(value)
            callbacker.callAll(with: value + 1)
            result.append(value * 10)
        }
        callbacker.callAll(with: 1)
        XCTAssertEqual(result, [1, 10, 2, 20])
        bag.dispose()
    }

    func testStartWithThenValuesSentFromTheCallback() {
        let callbacker = Callbacker<Int>()
        var result = [Int]()
        let bag = DisposeBag()
        bag += Signal(callbacker: callbacker).start(with: 1).take(first: 2).onValue { value in
            result.append(value)
            callbacker.callAll(with: value + 1)
            result.append(value * 10)
        }
        XCTAssertEqual(result, [1, 10, 2, 20])
        bag.dispose()
    }

    func testWritingAReadWriteSignalFromItsAtOnceListener() {
        let signal = ReadWriteSignal(1)
        var result = 0
        let bag = DisposeBag()
        bag += signal.distinct().atOnce().onValue { value in
            signal.value = 2
            result = value
        }
        XCTAssertEqual(result, 2)
        bag.dispose()
    }

    func testAFiniteSignalEndedFromItsOwnCallback() {
        let callbacker = Callbacker<Event<Int>>()
        var result = [Int]()
        let bag = DisposeBag()
        bag += FiniteSignal(callbacker: callbacker).start(with: 1).onValue { value in
            result.append(value)
            callbacker.callAll(with: .value(value + 1))
            callbacker.callAll(with: .end)
        }
        XCTAssertEqual(result, [1, 2])
        bag.dispose()
    }

    func testTakeCollectsValuesSentFromAtValue() {
        let callbacker = Callbacker<Int>()
        var collected: [Int] = []
        let bag = DisposeBag()
        bag += Signal(callbacker: callbacker).start(with: 1).take(first: 4).atValue { value in
            callbacker.callAll(with: value * 2)
            callbacker.callAll(with: value * 2 + 1)
        }.collect().onValue { values in
            collected = values
        }
        XCTAssertEqual(collected, [1, 2, 3, 4])
        bag.dispose()
    }

    func testAnotherSignalsValueSentFromACallbackArrivesAtOnce() {
        let bag = DisposeBag()
        let callbacker = Callbacker<Int>()
        let other = Callbacker<Int>()
        var latest = 1
        bag += Signal(callbacker: other).onValue { latest = $0 }
        bag += Signal(callbacker: callbacker).onValue { _ in
            XCTAssertEqual(latest, 1)
            other.callAll(with: 2)
            XCTAssertEqual(latest, 2)
        }
        callbacker.callAll(with: 1)
        XCTAssertEqual(latest, 2)
        bag.dispose()
    }

    func testMergingAReadableSignalWithItself() {
        let bag = DisposeBag()
        let callbacker = Callbacker<Event<Int>>()
        let signal = FiniteSignal<Int>(callbacker: callbacker).plain().readable(initial: 1)
        var result = [Int]()
        bag += merge(signal, signal).atOnce().onValue { result.append($0) }
        XCTAssertEqual(signal.value, 1)
        callbacker.callAll(with: .value(2))
        callbacker.callAll(with: .end)
        XCTAssertEqual(result, [1, 2, 2])
        bag.dispose()
    }

    func testReusingADoubleAtOnceThroughMaps() {
        let property = ReadWriteSignal(0)
        let bag = DisposeBag()
        let signal = property.map { $0 + 2 }.atOnce().map { $0 - 1 }.atOnce().map { $0 + 1 }.filter { _ in true }
        var total = 0
        bag += signal.onValue { total += $0 * 2 }
        bag += signal.onValue { total += $0 * 3 }
        XCTAssertEqual(total, (4 + 6) * 2)
        property.value = 1
        XCTAssertEqual(total, (4 + 6) * 2 + 3 * 2 + 3 * 3)
        bag.dispose()
    }

    func testDoubleAtOnceLatestTwoBoundToAClosure() {
        let property = ReadWriteSignal(1)
        var sum = 0
        let bag = DisposeBag()
        bag += property.atOnce().atOnce().latestTwo().bindTo { sum = $0 + $1 }
        XCTAssertEqual(sum, 1 + 1)
        property.value = 2
        XCTAssertEqual(sum, 1 + 2)
        bag.dispose()
    }

    func testReadableCapturingAPropertyWithAndWithoutListeners() {
        final class Model {
            var value = 0
        }
        let model = Model()
        let callbacker = Callbacker<Int>()
        let signal = Signal(callbacker: callbacker).readable(capturing: model.value).map { $0 * 2 }
        XCTAssertEqual(signal.value, 0)
        model.value = 1
        XCTAssertEqual(signal.value, 2)
        var total = 0
        let bag = DisposeBag()
        bag += signal.onValue { total += $0 }
        callbacker.callAll(with: 2)
        XCTAssertEqual(signal.value, 2)
        bag.dispose()
        model.value = 3
        XCTAssertEqual(signal.value, 6)
        XCTAssertEqual(total, 4)
    }
    func testDistinctReadWriteSignalSkipsWritingTheSameValue() {
        var stored = 0
        var writes = 0
        let signal = ReadWriteSignal(getValue: { stored }, setValue: { stored = $0; writes += 1 }).distinct()
        var changes = 0
        let bag = DisposeBag()
        bag += signal.onValue { _ in changes += 1 }
        signal.value = 0
        signal.value = 1
        signal.value = 1
        signal.value = 2
        XCTAssertEqual(writes, 2)
        XCTAssertEqual(changes, 2)
        bag.dispose()
    }

    func testSharedReadWriteSignalReadsItsValueOncePerListening() {
        var stored = 0
        var reads = 0
        let signal = ReadWriteSignal(getValue: {
            reads += 1
            return stored
        }, setValue: { stored = $0 }).shared()
        XCTAssertEqual(reads, 0)
        XCTAssertEqual(signal.value, 0)
        XCTAssertEqual(reads, 1)

        var first = 0
        var second = 0
        let bag = DisposeBag()
        bag += signal.onValue { _ in first += 1 }
        signal.value = 1
        XCTAssertEqual(reads, 2)
        XCTAssertEqual(signal.value, 1)
        XCTAssertEqual(reads, 2)
        bag += signal.atOnce().onValue { _ in second += 1 }
        XCTAssertEqual(second, 1)
        signal.value = 2
        XCTAssertEqual(signal.value, 2)
        XCTAssertEqual([first, second, reads], [2, 2, 2])
        bag.dispose()
        signal.value = 3
        XCTAssertEqual(signal.value, 3)
        XCTAssertEqual(reads, 3)
    }

    func testFlatMapLatestOfPlainSignals() {
        let outer = ReadWriteSignal(0)
        let inner = ReadWriteSignal(0)
        var latest = 0
        var count = 0
        let bag = DisposeBag()
        bag += outer.plain().flatMapLatest { value in inner.plain().map { value + $0 } }.onValue {
            count += 1
            latest = $0
        }
        inner.value = 1
        XCTAssertEqual(latest, 0)
        outer.value = 2
        XCTAssertEqual(latest, 0)
        inner.value = 3
        XCTAssertEqual(latest, 2 + 3)
        inner.value = 4
        outer.value = 5
        XCTAssertEqual(latest, 2 + 4)
        inner.value = 6
        XCTAssertEqual(latest, 5 + 6)
        XCTAssertEqual(count, 3)
        bag.dispose()
    }

    func testFlatMapLatestOfReadableSignals() {
        let outer = ReadWriteSignal(1)
        let innerA = ReadWriteSignal(2)
        let innerB = ReadWriteSignal(3)
        var latest = 0
        var count = 0
        let bag = DisposeBag()
        bag += outer.readOnly().flatMapLatest { value in
            (value > 2 ? innerB : innerA).readOnly().map { value + $0 }
        }.atOnce().onValue {
            count += 1
            latest = $0
        }
        XCTAssertEqual(latest, 1 + 2)
        innerB.value = 4
        XCTAssertEqual(latest, 1 + 2)
        innerA.value = 3
        XCTAssertEqual(latest, 1 + 3)
        outer.value = 2
        XCTAssertEqual(latest, 2 + 3)
        outer.value = 3
        XCTAssertEqual(latest, 3 + 4)
        innerA.value = 4
        XCTAssertEqual(latest, 3 + 4)
        innerB.value = 5
        XCTAssertEqual(latest, 3 + 5)
        XCTAssertEqual(count, 5)
        bag.dispose()
    }

    func testDisposingBeforeAScheduledValueArrives() {
        let done = expectation(description: "only the second listener")
        let scheduler = Scheduler(identifyingObject: self, async: { DispatchQueue.main.async(execute: $0) }, sync: { $0() })
        let property = ReadWriteSignal(1)
        let signal = property.atOnce().map(on: scheduler) { $0 * 2 }
        let bag = DisposeBag()
        bag += signal.onValue { _ in XCTFail("disposed before the value arrived") }
        bag.dispose()
        bag += signal.onValue { _ in done.fulfill() }
        wait(for: [done], timeout: 10)
        bag.dispose()
    }
}
