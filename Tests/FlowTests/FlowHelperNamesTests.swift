import Flow
import FlowTestSupport
import Testing

/// A control as Flow's guides show one: it can be disabled, and knows whether it has listeners.
/// Used on one thread only (the test's).
private final class Control: Enablable, HasEventListeners, @unchecked Sendable {
    var isEnabled: Bool
    var hasEventListeners: Bool

    init(isEnabled: Bool, hasEventListeners: Bool) {
        self.isEnabled = isEnabled
        self.hasEventListeners = hasEventListeners
    }
}

private struct Screen: HasEnablableEventListeners {
    let controls: [Control]
    var enablableEventListeners: [Enablable & HasEventListeners] { controls }
}

/// `Delegate`, `Enablable`, `HasEventListeners`, `HasEnablableEventListeners` and `driven(by:)`, as
/// Flow documents them.
@Suite("Flow's helper names")
struct FlowHelperNamesTests {
    @Test("a Delegate calls the callback set last, and none once its disposable is disposed")
    func delegateCallsTheCallbackSet() {
        let delegate = Delegate<Int, Bool>()
        #expect(delegate.call(5) == nil)
        #expect(!delegate.isSet)

        let bag = DisposeBag()
        bag += delegate.set { $0 > 5 }
        #expect(delegate.isSet)
        #expect(delegate.call(10) == true)
        #expect(delegate.call(1) == false)

        bag += delegate.set { $0 < 5 }
        #expect(delegate.call(10) == false)
        #expect(delegate.call(1) == true)

        bag.dispose()
        #expect(delegate.call(5) == nil)
        #expect(!delegate.isSet)
    }

    @Test("onSet gets each callback as it is set, and its disposable is disposed when the callback is replaced or removed")
    func delegateOnSet() {
        let sets = Shared(0)
        let removals = Shared(0)
        let answers = Shared([Bool]())
        let delegate = Delegate<Int, Bool>(onSet: { callback in
            answers.mutate { $0.append(callback(10)) }
            sets.mutate { $0 += 1 }
            return Disposer { removals.mutate { $0 += 1 } }
        })
        let bag = DisposeBag()
        bag += delegate.set { $0 > 5 }
        #expect(sets.value == 1)
        #expect(removals.value == 0)

        bag += delegate.set { $0 < 5 }
        #expect(sets.value == 2)
        #expect(removals.value == 1)

        bag.dispose()
        #expect(removals.value == 2)
        #expect(answers.value == [true, false])
    }

    @Test("disposing a replaced callback's disposable leaves the current callback set")
    func disposingAReplacedCallbackKeepsTheCurrentOne() {
        let delegate = Delegate<Void, String>()
        let first = delegate.set { "first" }
        let second = delegate.set { "second" }
        first.dispose()
        #expect(delegate.call() == "second")
        second.dispose()
        #expect(delegate.call() == nil)
    }

    @Test("the delegate lets go of a removed callback's captures")
    func delegateReleasesTheRemovedCallback() {
        let live = LiveObjects()
        let delegate = Delegate<Int, Int>()
        let disposable: Disposable
        do {
            let captured = live.make()
            disposable = delegate.set { value in
                captured.touch()
                return value
            }
        }
        #expect(live.alive == 1)
        disposable.dispose()
        #expect(live.alive == 0)
    }

    @Test("disable() and enable() set isEnabled, and their disposables restore the value before")
    func enablable() {
        let control = Control(isEnabled: true, hasEventListeners: false)
        let disabling = control.disable()
        #expect(!control.isEnabled)
        disabling.dispose()
        #expect(control.isEnabled)

        control.isEnabled = false
        let enabling = control.enable()
        #expect(control.isEnabled)
        enabling.dispose()
        #expect(!control.isEnabled)
    }

    @Test("a ReadWriteSignal<Bool> can be disabled and enabled the same way")
    func readWriteSignalDisableAndEnable() {
        let isEditable = ReadWriteSignal(true)
        let disabling = isEditable.disable()
        #expect(!isEditable.value)
        disabling.dispose()
        #expect(isEditable.value)

        let isBusy = ReadWriteSignal(false)
        let enabling = isBusy.enable()
        #expect(isBusy.value)
        enabling.dispose()
        #expect(!isBusy.value)
    }

    @Test("disableActiveEventListeners disables the enabled parts with listeners, and restores them")
    func disableActiveEventListeners() {
        let controls = [(false, false), (true, false), (false, true), (true, true)].map {
            Control(isEnabled: $0.0, hasEventListeners: $0.1)
        }
        let restore = Screen(controls: controls).disableActiveEventListeners()
        #expect(controls.map(\.isEnabled) == [false, true, false, false])
        restore.dispose()
        #expect(controls.map(\.isEnabled) == [false, true, false, true])
    }

    @Test("driven(by:) signals the current value each time the driver signals, and ends with it")
    func drivenBy() {
        onTestScheduler {
            let text = ReadWriteSignal("a")
            let taps = Callbacker<Event<Void>>()
            let sent = Recorder<String>()
            let ended = Shared(false)
            let bag = DisposeBag()
            bag += text.driven(by: FiniteSignal(callbacker: taps)).onValue { sent.append($0) }
            bag += text.driven(by: FiniteSignal(callbacker: taps)).onEnd { ended.mutate { $0 = true } }
            taps.callAll(with: .value(()))
            text.value = "b"
            text.value = "c"
            taps.callAll(with: .value(()))
            taps.callAll(with: .value(()))
            #expect(sent.elements == ["a", "c", "c"])
            taps.callAll(with: .end)
            #expect(ended.value)
            bag.dispose()
        }
    }

    @Test("driven(by:) a readable driver is readable, with the driven signal's current value")
    func drivenByAReadableDriver() {
        onTestScheduler {
            let text = ReadWriteSignal("a")
            let driver = ReadWriteSignal(0)
            let driven: ReadSignal<String> = text.driven(by: driver)
            text.value = "b"
            #expect(driven.value == "b")
            let seen = Recorder<String>()
            let disposable = driven.atOnce().onValue { seen.append($0) }
            text.value = "c"
            driver.value = 1
            #expect(seen.elements == ["b", "c"])
            disposable.dispose()
        }
    }
}
