// Flow's helper names (`Delegate`, `Enablable`, `HasEventListeners`, `HasEnablableEventListeners`,
// `driven(by:)`) and its queue abort, used the way Flow code uses them, in Swift 5 mode: captured
// `var`s mutated in callbacks, defaulted arguments, plain classes.
import Flow
import XCTest

private struct TableIndex: Hashable {
    var row: Int
}

private final class Cell {
    let title: String
    init(title: String) { self.title = title }
}

private final class Listener: HasEventListeners, Enablable {
    var isEnabled = false
    var hasEventListeners = false
}

extension Array: HasEnablableEventListeners where Element: HasEventListeners & Enablable {
    public var enablableEventListeners: [Enablable & HasEventListeners] { return self }
}

/// A request that would call its completion when done; cancelling it drops the completion.
private final class PendingRequest {
    private var completion: ((Result<Int>) -> Void)?
    init(completion: @escaping (Result<Int>) -> Void) { self.completion = completion }
    func cancel() { completion = nil }
}

private final class TextField {
    let text = ReadWriteSignal("")
}

final class FlowHelpersCodeTests: XCTestCase {
    func testDelegateAsTheLifetimeGuideShowsIt() {
        let cellForIndex = Delegate<TableIndex, Cell>()
        let bag = DisposeBag()
        bag += cellForIndex.set { index in return Cell(title: "row \(index.row)") }
        let cell = cellForIndex.call(TableIndex(row: 3))
        XCTAssertEqual(cell?.title, "row 3")
        bag.dispose()
        XCTAssertNil(cellForIndex.call(TableIndex(row: 3)))
    }

    func testDelegateOnSetWithCapturedCounters() {
        var onSetCount = 0
        var onSetDisposeCount = 0
        let d = Delegate<Int, Bool> { callback in
            XCTAssertEqual(callback(10), onSetCount == 0)
            onSetCount += 1
            return Disposer {
                onSetDisposeCount += 1
            }
        }
        let bag = DisposeBag()
        bag += d.set { $0 > 5 }
        bag += d.set { $0 < 5 }
        XCTAssertEqual(onSetCount, 2)
        XCTAssertEqual(onSetDisposeCount, 1)
        XCTAssertTrue(d.isSet)
        bag.dispose()
        XCTAssertEqual(onSetDisposeCount, 2)
        XCTAssertFalse(d.isSet)
    }

    func testVoidDelegate() {
        var calls = 0
        let titleProvider = Delegate<(), String>()
        let disposable = titleProvider.set {
            calls += 1
            return "title"
        }
        XCTAssertEqual(titleProvider.call(), "title")
        XCTAssertEqual(calls, 1)
        disposable.dispose()
    }

    func testDisableActiveEventListeners() {
        let listeners: [Listener] = [(false, false), (true, false), (false, true), (true, true)].map {
            let l = Listener()
            l.isEnabled = $0
            l.hasEventListeners = $1
            return l
        }
        let d = listeners.disableActiveEventListeners()
        XCTAssertEqual(listeners.map { $0.isEnabled }, [false, true, false, false])
        d.dispose()
        XCTAssertEqual(listeners.map { $0.isEnabled }, [false, true, false, true])
    }

    func testEnablableAndBoolSignals() {
        let listener = Listener()
        listener.isEnabled = true
        let bag = DisposeBag()
        bag += listener.disable()
        XCTAssertFalse(listener.isEnabled)
        bag.dispose()
        XCTAssertTrue(listener.isEnabled)

        let isLoading = ReadWriteSignal(false)
        bag += isLoading.enable()
        XCTAssertTrue(isLoading.value)
        bag.dispose()
        XCTAssertFalse(isLoading.value)
    }

    func testDrivenBy() {
        let field = TextField()
        let sendTaps = Callbacker<()>()
        var sent: [String] = []
        let bag = DisposeBag()
        bag += field.text.driven(by: sendTaps.providedSignal).onValue(on: .none) { text in
            sent.append(text)
        }
        field.text.value = "hello"
        sendTaps.callAll()
        field.text.value = "hello again"
        sendTaps.callAll()
        XCTAssertEqual(sent, ["hello", "hello again"])
        bag.dispose()
    }

    func testAbortingAQueueAbortsTheRunningOperation() {
        let started = expectation(description: "started")
        let done = expectation(description: "aborted")
        let queue = FutureQueue()
        var disposed = false
        queue.enqueue { () -> Future<Int> in
            started.fulfill()
            return Future<Int> { completion in
                let request = PendingRequest(completion: completion)
                return Disposer {
                    request.cancel()
                    disposed = true
                }
            }
        }.onError { error in
            XCTAssertEqual(error as? FutureError, .aborted)
            done.fulfill()
        }
        wait(for: [started], timeout: 10)
        queue.abortQueuedOperations(with: FutureError.aborted)
        wait(for: [done], timeout: 10)
        XCTAssertTrue(disposed)
        XCTAssertTrue(queue.isEmpty)
    }

    func testAnEndedSignalLetsGoOfItsListener() {
        final class Screen {
            var titles: [String] = []
        }
        var screen: Screen? = Screen()
        weak let weakScreen = screen
        let callbacker = Callbacker<String>()
        let bag = DisposeBag()
        bag += callbacker.providedSignal.onFirstValue(on: .none) { [screen] title in
            screen?.titles.append(title)
        }
        screen = nil
        XCTAssertNotNil(weakScreen)
        callbacker.callAll(with: "first")
        XCTAssertNil(weakScreen)
        bag.dispose()
    }
}
