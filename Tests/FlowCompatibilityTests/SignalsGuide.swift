// Code written the way Flow's Signals guide (Documentation/Signals.md) shows it, compiled in Swift 5
// language mode: captured `var`s mutated in callbacks, defaulted schedulers, trailing closures.
import Flow
import XCTest

private final class Button {
    var isEnabled = false
}

private enum Status {
    case open, closed
    var isOpen: Bool { self == .open }
}

/// Stands in for NotificationCenter, as in the guide's "Constructing signals" example.
private final class NotificationCenterLike {
    var observers: [Int: (String) -> Void] = [:]
    var nextObserver = 0

    func addObserver(using block: @escaping (String) -> Void) -> Int {
        nextObserver += 1
        observers[nextObserver] = block
        return nextObserver
    }

    func removeObserver(_ observer: Int) { observers[observer] = nil }

    func post(_ name: String) { observers.values.forEach { $0(name) } }

    func signal(forName name: String) -> Signal<String> {
        return Signal { callback in  // will be called once someone starts listening
            let observer = self.addObserver(using: callback)
            return Disposer {  // make sure to clean up once the listener is removed
                self.removeObserver(observer)
            }
        }
    }
}

private final class Model {
    var value = 1
}

final class SignalsGuideTests: XCTestCase {
    func testListeningTransformingAndDisposing() {
        let callbacker = Callbacker<Status>()
        let statusSignal = Signal(callbacker: callbacker)
        var statuses: [Status] = []
        let disposable = statusSignal.onValue { status in
            statuses.append(status)
        }
        let isEnabled = statusSignal.map { $0.isOpen }
        let didEnable = isEnabled.filter { $0 }.toVoid()
        var enableCount = 0
        let bag = DisposeBag()
        bag += didEnable.onValue { enableCount += 1 }
        callbacker.callAll(with: .open)
        callbacker.callAll(.closed)
        disposable.dispose()
        callbacker.callAll(.open)
        XCTAssertEqual(statuses, [.open, .closed])
        XCTAssertEqual(enableCount, 2)
        bag.dispose()
    }

    func testConstructingASignalWithCleanUp() {
        let center = NotificationCenterLike()
        let signal = center.signal(forName: "ready")
        var received: [String] = []
        let bag = DisposeBag()
        bag += signal.onValue { received.append($0) }
        center.post("ready")
        bag.dispose()
        center.post("ready")
        XCTAssertEqual(received, ["ready"])
        XCTAssertTrue(center.observers.isEmpty)
    }

    func testProducingValuesWithACallbacker() {
        let callbacker = Callbacker<Bool>()
        let bag = DisposeBag()
        var enabledStates: [Bool] = []
        bag += callbacker.addCallback { isEnabled in enabledStates.append(isEnabled) }
        callbacker.callAll(true)
        let isEnabled = Signal(callbacker: callbacker)
        var fromSignal: [Bool] = []
        bag += isEnabled.onValue { fromSignal.append($0) }
        callbacker.callAll(false)
        XCTAssertEqual(enabledStates, [true, false])
        XCTAssertEqual(fromSignal, [false])
        bag.dispose()
    }

    func testTheFourKinds() {
        let model = Model()
        let callbacker = Callbacker<Int>()
        let readSignal = ReadSignal(capturing: model.value, callbacker: callbacker)
        let upgraded = Signal(callbacker: callbacker).readable(capturing: model.value)
        model.value = 2
        XCTAssertEqual(readSignal.value, 2)
        XCTAssertEqual(upgraded.value, 2)

        let internalState = ReadWriteSignal(false)
        let state: ReadSignal<Bool> = internalState.readOnly()
        internalState.value = true
        XCTAssertTrue(state.value)

        let signal = ReadWriteSignal(true)
        XCTAssertTrue(signal.value)
        var stored = 0
        let writable = readSignal.writable { stored = $0 }
        writable.value = 5
        XCTAssertEqual(stored, 5)

        let plain: Signal<Int> = readSignal.plain()
        var received: [Int] = []
        let bag = DisposeBag()
        bag += plain.take(first: 2).onEvent { event in
            if case .value(let value) = event { received.append(value) }
        }
        callbacker.callAll(with: 3)
        callbacker.callAll(with: 4)
        callbacker.callAll(with: 5)
        XCTAssertEqual(received, [3, 4])
        bag.dispose()
    }

    func testReadSignalsAtOnceAndCombiningAndBinding() {
        let emailField = ReadWriteSignal("")
        let passwordField = ReadWriteSignal("")
        let button = Button()
        let bag = DisposeBag()
        bag += combineLatest(emailField, passwordField)
            .map { email, password in
                email.contains("@") && password.count >= 8
            }.atOnce().bindTo(button, \.isEnabled)
        XCTAssertFalse(button.isEnabled)
        emailField.value = "me@example.com"
        passwordField.value = "correct horse"
        XCTAssertTrue(button.isEnabled)

        let readWriteSignal = ReadWriteSignal(false)
        bag += emailField.map { $0.isEmpty }.bindTo(readWriteSignal)
        emailField.value = ""
        XCTAssertTrue(readWriteSignal.value)

        var texts: [String] = []
        bag += emailField.atOnce().onValue { texts.append($0) }
        emailField.value = "a"
        XCTAssertEqual(texts, ["", "a"])
        bag.dispose()
    }

    func testFiniteSignalsEnd() {
        var events: [String] = []
        let finite = FiniteSignal<Int> { callback in
            callback(.value(1))
            callback(.end)
            return NilDisposer()
        }
        let bag = DisposeBag()
        bag += finite.onEvent { event in
            switch event {
            case .value(let value): events.append("\(value)")
            case .end(let error): events.append(error == nil ? "end" : "error")
            }
        }
        XCTAssertEqual(events, ["1", "end"])
        bag.dispose()
    }

    func testSchedulingOnAnotherScheduler() {
        let imageProcessing = Scheduler(label: "image processing")
        let callbacker = Callbacker<Int>()
        let done = expectation(description: "processed")
        var processed: [Int] = []
        let bag = DisposeBag()
        bag += Signal(callbacker: callbacker).map(on: imageProcessing) { image in
            image * 2  // called in the background
        }.onValue(on: imageProcessing) { image in
            processed.append(image)
            done.fulfill()
        }
        callbacker.callAll(with: 21)
        wait(for: [done], timeout: 10)
        XCTAssertEqual(imageProcessing.sync { processed }, [42])
        bag.dispose()
    }

    func testFuturesAndSignals() {
        var values: [Int] = []
        let bag = DisposeBag()
        bag += Future(3).valueSignal.onValue { values.append($0) }
        let signal = ReadWriteSignal(0)
        Future(4).bindTo(signal)
        XCTAssertEqual(values, [3])
        XCTAssertEqual(signal.value, 4)
        let queue = FutureQueue()
        var emptied = 0
        bag += queue.didBecomeEmpty.onValue { emptied += 1 }
        queue.enqueue { Future(1) }
        XCTAssertTrue(queue.isEmptySignal.value)
        bag.dispose()
    }

    func testWeakListenersAndDebugging() {
        let controller = Controller()
        let callbacker = Callbacker<Int>()
        var printed: [String] = []
        controller.bag += Signal(callbacker: callbacker)
            .debug("updates", printer: { printed.append($0) })
            .with(weak: controller)
            .onValue { update, controller in controller.updates.append(update) }
        callbacker.callAll(with: 1)
        XCTAssertEqual(controller.updates, [1])
        XCTAssertEqual(printed.count, 2)
        XCTAssertTrue(printed.last?.hasSuffix("updates -> event(value(1))") ?? false)
        controller.bag.dispose()
    }
}

/// A controller of the kind Flow's `with(weak:)` is for: it keeps the listeners that reference it.
private final class Controller {
    let bag = DisposeBag()
    var updates: [Int] = []
}
