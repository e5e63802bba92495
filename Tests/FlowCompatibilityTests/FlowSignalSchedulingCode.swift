// Signal scheduling as Flow's tests check it: listeners registered on the main thread get their
// values on the main thread, whichever thread sends them; `on:` moves a transform elsewhere. Swift 5
// mode, XCTest, the main thread as the test's thread.
import Dispatch
import Flow
import Foundation
import XCTest

/// What the main thread saw: written and read on the main thread only.
private final class MainLog {
    var values: [Int] = []
    var whenTheLastWriteReturned: [Int] = []
}

private let serialBackground = Scheduler(label: "compat.serial-background")

private func assertMain(file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertTrue(Thread.isMainThread, "not on the main thread", file: file, line: line)
}

private func assertSerialBackground(file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertTrue(serialBackground.isExecuting, "not on the serial background scheduler", file: file, line: line)
}

final class FlowSignalSchedulingCodeTests: XCTestCase {
    func testListeningOnMainToValuesSentFromABackgroundThread() {
        let bag = DisposeBag()
        let done = expectation(description: "received")
        DispatchQueue.global().async {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            DispatchQueue.main.sync {
                bag += signal.map { value -> Int in
                    assertMain()
                    return value + 1
                }.onValue { value in
                    assertMain()
                    XCTAssertEqual(value, 4712)
                    done.fulfill()
                }
            }
            callbacker.callAll(with: 4711)
        }
        wait(for: [done], timeout: 10)
        bag.dispose()
    }

    func testMapOnAnotherSchedulerThenBackOnMain() {
        let bag = DisposeBag()
        let done = expectation(description: "received")
        let callbacker = Callbacker<Int>()
        bag += Signal(callbacker: callbacker).map(on: serialBackground) { value -> Int in
            assertSerialBackground()
            return value * 2
        }.map { value -> Int in
            assertMain()
            return value + 1
        }.onValue(on: serialBackground) { value in
            assertSerialBackground()
            XCTAssertEqual(value, 5 * 2 + 1)
            done.fulfill()
        }
        callbacker.callAll(with: 5)
        wait(for: [done], timeout: 10)
        bag.dispose()
    }

    func testCurrentValueThroughTransformsOnOtherSchedulers() {
        let signal = ReadWriteSignal(7).map(on: serialBackground) { value -> Int in
            assertSerialBackground()
            return value * 2
        }.map { value -> Int in
            value + 1
        }.map(on: serialBackground) { value -> Int in
            assertSerialBackground()
            return value * 2
        }
        XCTAssertEqual(signal.value, (7 * 2 + 1) * 2)
    }

    func testAtOnceThroughAnotherScheduler() {
        let bag = DisposeBag()
        let rw = ReadWriteSignal(7)
        var result = 0
        bag += rw.map(on: serialBackground) { value -> Int in
            assertSerialBackground()
            return value * 2
        }.map { value -> Int in
            value + 1
        }.atOnce().onValue { value in
            result = value
        }
        XCTAssertEqual(result, 7 * 2 + 1)
        bag.dispose()
    }

    // The tests below send values to listeners on the main thread from the main thread and from a
    // background thread, interleaved, and expect them in the order sent, as Flow delivers them: the
    // main loop, the main queue and the main actor are one serial context.

    func testFiniteSignalValuesFromMainAndBackgroundArriveInOrder() throws {
        let bag = DisposeBag()
        let done = expectation(description: "completed")
        let callbacker = Callbacker<Event<Int>>()
        bag += FiniteSignal<Int>(callbacker: callbacker).map { value -> Int in
            assertMain()
            return value * 2
        }.collect().onValue { values in
            assertMain()
            XCTAssertEqual(values, [2, 4, 6])
            done.fulfill()
        }
        callbacker.callAll(with: .value(1))
        DispatchQueue.global().async {
            callbacker.callAll(with: .value(2))
            DispatchQueue.main.async {
                callbacker.callAll(with: .value(3))
                callbacker.callAll(with: .end)
            }
        }
        wait(for: [done], timeout: 10)
        bag.dispose()
    }

    func testReadWriteSignalWrittenFromMainAndBackground() throws {
        let bag = DisposeBag()
        let done = expectation(description: "completed")
        let property = ReadWriteSignal(1)
        let log = MainLog()
        bag += property.map { value -> Int in
            assertMain()
            return value * 2
        }.onValue { value in
            assertMain()
            log.values.append(value)
        }
        property.value = 2
        DispatchQueue.global().async {
            property.value = 3
            DispatchQueue.main.async {
                property.value = 4
                log.whenTheLastWriteReturned = log.values
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(log.whenTheLastWriteReturned, [4, 6, 8])
        bag.dispose()
    }

    func testCombineLatestWrittenFromMainAndBackground() throws {
        let bag = DisposeBag()
        let done = expectation(description: "completed")
        let first = ReadWriteSignal(1)
        let second = ReadWriteSignal(10)
        let log = MainLog()
        bag += combineLatest(first, second).map { a, b -> Int in
            assertMain()
            return a + b
        }.onValue { sum in
            assertMain()
            log.values.append(sum)
        }
        first.value = 2
        DispatchQueue.global().async {
            second.value = 20
            first.value = 3
            DispatchQueue.main.async {
                second.value = 30
                log.whenTheLastWriteReturned = log.values
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(log.whenTheLastWriteReturned, [12, 22, 23, 33])
        bag.dispose()
    }
}
