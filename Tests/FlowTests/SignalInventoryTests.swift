import Flow
import FlowTestSupport
import Testing

/// Listens to `signal`, runs `send`, and returns what arrived (values and the end).
private func events<Kind, Value>(
    of signal: CoreSignal<Kind, Value>, _ send: () -> Void = {}
) -> [String] {
    let recorder = Recorder<String>()
    let disposable = FiniteSignal(signal).onEvent { recorder.append(describe($0)) }
    send()
    disposable.dispose()
    return recorder.elements
}

/// A type of one's own providing a signal, as Flow's `SignalProvider` documentation shows.
private final class Thermometer: SignalProvider, Sendable {
    let readings = Callbacker<Int>()
    var providedSignal: Signal<Int> { Signal(callbacker: readings) }
}

private struct Profile: Equatable, Sendable {
    var nickname: String?
}

/// The rows of Flow's signal inventory (`Docs/FlowCompatibility.md`) that no other suite pins: each
/// as Flow's documentation comments (and marble diagrams) describe it.
@Suite("Flow signals inventory")
struct SignalInventoryTests {
    @Test("atValue runs its callback with each value before passing it on, and keeps the kind")
    func atValue() {
        onTestScheduler {
            let signal = ReadWriteSignal(1)
            let seen = Recorder<Int>()
            let tapped: ReadWriteSignal<Int> = signal.atValue { seen.append($0) }
            #expect(events(of: tapped) { signal.value = 2; signal.value = 3 } == ["2", "3"])
            #expect(seen.elements == [2, 3])
            tapped.value = 4
            #expect(signal.value == 4)
        }
    }

    @Test("contains(where:) and allSatisfy(where:) of a readable signal start from its current value")
    func containsAndAllSatisfy() {
        onTestScheduler {
            let signal = ReadWriteSignal(1)
            let send = { for value in [3, 5, 2, 7] { signal.value = value } }
            #expect(events(of: signal.contains { $0.isMultiple(of: 2) }.atOnce(), send)
                == ["false", "false", "false", "true", "true"])
            signal.value = 0
            #expect(events(of: signal.allSatisfy { $0.isMultiple(of: 2) }.atOnce()) {
                for value in [2, 4, 1, 6] { signal.value = value }
            } == ["true", "true", "true", "false", "false"])
        }
    }

    @Test("collect gives every value in one array at the end")
    func collect() {
        onTestScheduler {
            #expect(events(of: [1, 2, 3].signal().collect()) == ["[1, 2, 3]", "end"])
        }
    }

    @Test("atEvent, atEnd and atError run their callbacks and pass the events on")
    func atEventAtEndAtError() {
        onTestScheduler {
            let seen = Recorder<String>()
            let signal = [1, 2].signal()
                .atEvent { seen.append("event \(describe($0))") }
                .atEnd { seen.append("end") }
            #expect(events(of: signal) == ["1", "2", "end"])
            #expect(seen.elements == ["event 1", "event 2", "event end", "end"])

            let errors = Recorder<String>()
            let failing = FiniteSignal<Int>(onEvent: { callback in
                callback(.end(TestError(code: 4)))
                return NilDisposer()
            }).atError { errors.append("\($0)") }
            #expect(events(of: failing) == ["end(TestError(code: 4))"])
            #expect(errors.elements == ["TestError(code: 4)"])
        }
    }

    @Test("writable(signalOnSet:) signals a write only when asked to")
    func writable() {
        onTestScheduler {
            let stored = Shared(1)
            let changes = Callbacker<Int>()
            let readable = ReadSignal(getValue: { stored.value }, callbacker: changes)
            let quiet = readable.writable { newValue in stored.mutate { $0 = newValue } }
            #expect(events(of: quiet) { quiet.value = 2 } == [])
            #expect(readable.value == 2)
            let loud = readable.writable(signalOnSet: true) { newValue in stored.mutate { $0 = newValue } }
            #expect(events(of: loud) { loud.value = 3 } == ["3"])
        }
    }

    @Test("willWrite and didWrite see each value written, on their scheduler")
    func willWriteAndDidWrite() {
        onTestScheduler {
            let signal = ReadWriteSignal(0)
            let seen = Recorder<String>()
            let observed = signal
                .willWrite(on: .none) { seen.append("will \($0) (now \(signal.value))") }
                .didWrite(on: .none) { seen.append("did \($0) (now \(signal.value))") }
            observed.value = 5
            #expect(signal.value == 5)
            #expect(seen.elements.sorted() == ["did 5 (now 5)", "will 5 (now 0)"])
        }
    }

    @Test("Signal(just:) gives one value; Signal() and FiniteSignal() give nothing")
    func constantSignals() {
        onTestScheduler {
            #expect(events(of: Signal(just: 7)) == ["7"])
            #expect(events(of: Signal<Int>()) == [])
            #expect(events(of: FiniteSignal<Int>()) == [])
        }
    }

    @Test("a sequence's signal gives its elements, then ends")
    func sequenceSignal() {
        onTestScheduler {
            #expect(events(of: ["a", "b"].signal()) == ["a", "b", "end"])
        }
    }

    @Test("take(first: 0) ends at once, without a value")
    func takeNone() {
        onTestScheduler {
            let signal = ReadWriteSignal(1)
            #expect(events(of: signal.take(first: 0)) { signal.value = 2 } == ["end"])
        }
    }

    @Test("OrderedCallbacker.callAll(with:isOrderedBefore:) calls in the order given")
    func orderedCallbackerCustomOrder() {
        onTestScheduler {
            let callbacker = OrderedCallbacker<Int, String>()
            let log = Recorder<String>()
            let bag = DisposeBag()
            for order in [1, 3, 2] {
                bag += callbacker.addCallback({ value in log.append("\(order) \(value)") }, orderedBy: order)
            }
            let done = callbacker.callAll(with: "go", isOrderedBefore: >)
            #expect(log.elements == ["3 go", "2 go", "1 go"])
            #expect(done.result != nil)
            bag.dispose()
        }
    }

    @Test("Future(callbacker:) completes with the first result passed to the callbacker")
    func futureFromACallbacker() {
        onTestScheduler {
            let callbacker = Callbacker<Result<Int>>()
            let future = Future(callbacker: callbacker)
            #expect(!callbacker.isEmpty)
            callbacker.callAll(with: .success(1))
            callbacker.callAll(with: .success(2))
            #expect(future.result?.value == 1)
            #expect(callbacker.isEmpty)

            let cancelled = Future(callbacker: callbacker)
            cancelled.cancel()
            #expect(callbacker.isEmpty)
        }
    }

    @Test("a read-write signal's optional key path with a default reads the default for nil, and writes through")
    func keyPathWithDefault() {
        onTestScheduler {
            let profile = ReadWriteSignal(Profile(nickname: nil))
            let nickname = profile[\.nickname, default: "anonymous"]
            #expect(nickname.value == "anonymous")
            #expect(events(of: nickname) { nickname.value = "ada" } == ["ada"])
            #expect(profile.value == Profile(nickname: "ada"))
            profile.value = Profile(nickname: nil)
            #expect(nickname.value == "anonymous")
        }
    }

    @Test("withLatestFrom takes up to six readable signals")
    func withLatestFromSix() {
        onTestScheduler {
            let taps = Callbacker<Void>()
            let (a, b, c, d, e, f) = (ReadSignal(1), ReadSignal(2), ReadSignal(3), ReadSignal(4), ReadSignal(5), ReadSignal(6))
            let four = Signal(callbacker: taps).withLatestFrom(a, b, c, d).map { "\($0)\($1)\($2)\($3)" }
            let six = Signal(callbacker: taps).withLatestFrom(a, b, c, d, e, f).map { "\($0)\($1)\($2)\($3)\($4)\($5)" }
            #expect(events(of: four) { taps.callAll() } == ["1234"])
            #expect(events(of: six) { taps.callAll() } == ["123456"])
            #expect(six.value == "123456")
        }
    }

    @Test("a SignalProvider of one's own gets the transforms and listeners directly")
    func ownSignalProvider() {
        onTestScheduler {
            let thermometer = Thermometer()
            let warm = Recorder<Int>()
            let disposable = thermometer.filter { $0 > 20 }.onValue { warm.append($0) }
            for reading in [18, 22, 25] { thermometer.readings.callAll(with: reading) }
            #expect(warm.elements == [22, 25])
            disposable.dispose()
        }
    }

    @Test("toggle(_:) flips a read-write Bool signal on each value of a Void signal")
    func toggleFromAVoidSignal() {
        onTestScheduler {
            let taps = Callbacker<Void>()
            let isOn = ReadWriteSignal(false)
            let disposable = Signal(callbacker: taps).toggle(isOn)
            taps.callAll()
            #expect(isOn.value)
            taps.callAll()
            #expect(!isOn.value)
            disposable.dispose()
        }
    }
}
