import Flow
import Synchronization
import Testing

/// Listens to `signal` on the test loop, runs `send`, and returns what arrived (values and the end).
private func events<Kind, Value>(
    of signal: CoreSignal<Kind, Value>, _ send: () -> Void = {}
) -> [String] {
    let recorder = Recorder<String>()
    let disposable = FiniteSignal(signal).onEvent { recorder.append(describe($0)) }
    send()
    disposable.dispose()
    return recorder.elements
}

@Suite("Signals: transforms and combiners")
struct SignalTransformTests {
    @Test("map, compactMap, filter, toVoid, negate and a key path transform each value")
    func valueTransforms() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let send = { for value in 1...4 { callbacker.callAll(with: value) } }
            #expect(events(of: signal.map { $0 * 2 }, send) == ["2", "4", "6", "8"])
            #expect(events(of: signal.compactMap { $0.isMultiple(of: 2) ? $0 * 10 : nil }, send) == ["20", "40"])
            #expect(events(of: signal.filter { $0 > 2 }, send) == ["3", "4"])
            #expect(events(of: signal.toVoid(), send).count == 4)
            #expect(events(of: signal.map { $0 > 2 }.negate(), send) == ["true", "true", "false", "false"])
            #expect(events(of: signal[\.description.count], send) == ["1", "1", "1", "1"])
        }
    }

    @Test("a throwing map ends the signal with the error it throws")
    func throwingMapEnds() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let mapped = Signal(callbacker: callbacker).map { value throws -> Int in
                if value == 3 { throw TestError() }
                return value
            }
            let log = events(of: mapped) { for value in 1...5 { callbacker.callAll(with: value) } }
            #expect(log == ["1", "2", "end(TestError(code: 1))"])
        }
    }

    @Test("distinct, skip, take(while:), latestTwo, enumerate, buffer, reduce, contains")
    func statefulTransforms() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let send = { for value in [1, 2, 2, 2, 3, 1] { callbacker.callAll(with: value) } }
            #expect(events(of: signal.distinct(), send) == ["1", "2", "3", "1"])
            #expect(events(of: signal.skip(first: 2), send) == ["2", "2", "3", "1"])
            #expect(events(of: signal.skip(until: { $0 == 3 }), send) == ["3", "1"])
            #expect(events(of: signal.take(while: { $0 < 3 }), send) == ["1", "2", "2", "2", "end"])
            #expect(events(of: signal.latestTwo().map { "\($0)\($1)" }, send) == ["12", "22", "22", "23", "31"])
            #expect(events(of: signal.enumerate().map { "\($0.0)" }, send) == ["0", "1", "2", "3", "4", "5"])
            #expect(events(of: signal.buffer().map { $0.count }, send) == ["1", "2", "3", "4", "5", "6"])
            #expect(events(of: signal.reduce(0, combine: +), send) == ["1", "3", "5", "7", "10", "11"])
            #expect(events(of: signal.contains { $0 == 3 }, send) == ["false", "false", "false", "false", "true", "true"])
        }
    }

    @Test("a readable signal: atOnce gives the current value first; distinct counts it; latestTwo pairs it")
    func readableTransforms() {
        onTestScheduler {
            let signal = ReadWriteSignal(1)
            let send = { for value in [1, 2, 3] { signal.value = value } }
            #expect(events(of: signal.atOnce(), send) == ["1", "1", "2", "3"])
            signal.value = 1
            #expect(events(of: signal.distinct(), send) == ["2", "3"])
            signal.value = 1
            #expect(events(of: signal.latestTwo().map { "\($0)\($1)" }, send) == ["11", "12", "23"])
            signal.value = 1
            #expect(events(of: signal.reduce(10, combine: +).atOnce(), send) == ["11", "12", "14", "17"])
            signal.value = 0
            #expect(events(of: signal.start(with: 7, 8), send) == ["7", "8", "1", "2", "3"])
        }
    }

    @Test("readable(initial:) remembers the last value while someone listens")
    func readableInitial() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let readable = Signal(callbacker: callbacker).readable(initial: 0)
            #expect(readable.value == 0)
            let recorder = Recorder<Int>()
            let listener = readable.atOnce().onValue { recorder.append($0) }
            callbacker.callAll(with: 5)
            #expect(recorder.elements == [0, 5])
            listener.dispose()
        }
    }

    @Test("merge forwards every value and ends when all have ended, or at once on an error")
    func mergeEnds() {
        onTestScheduler {
            let a = Callbacker<Event<Int>>()
            let b = Callbacker<Event<Int>>()
            let merged = merge(FiniteSignal(callbacker: a), FiniteSignal(callbacker: b))
            let log = events(of: merged) {
                a.callAll(with: .value(1))
                b.callAll(with: .value(2))
                a.callAll(with: .end)
                b.callAll(with: .value(3))
                b.callAll(with: .end)
                b.callAll(with: .value(4))
            }
            #expect(log == ["1", "2", "3", "end"])
            let failing = events(of: merged) {
                a.callAll(with: .value(1))
                b.callAll(with: .end(TestError(code: 1)))
                a.callAll(with: .value(2))
            }
            #expect(failing == ["1", "end(TestError(code: 1))"])
        }
    }

    @Test("combineLatest waits for every input, then signals on each change; readable inputs combine their current values")
    func combineLatestCombines() {
        onTestScheduler {
            let a = Callbacker<Int>()
            let b = Callbacker<String>()
            let combined = combineLatest(Signal(callbacker: a), Signal(callbacker: b)).map { "\($0)\($1)" }
            let log = events(of: combined) {
                a.callAll(with: 1)
                a.callAll(with: 2)
                b.callAll(with: "x")
                a.callAll(with: 3)
                b.callAll(with: "y")
            }
            #expect(log == ["2x", "3x", "3y"])

            let x = ReadWriteSignal(1)
            let y = ReadWriteSignal("a")
            let z = ReadWriteSignal(true)
            let readable: ReadSignal<(Int, String, Bool)> = combineLatest(x, y, z)
            #expect(readable.value == (1, "a", true))
            let array = combineLatest([x, ReadWriteSignal(2)])
            #expect(array.value == [1, 2])
            let fourteen = combineLatest(x, x, x, x, x, x, x, x, x, x, x, x, x, y)
            #expect(fourteen.value.13 == "a")
            x.value = 5
            #expect(fourteen.value.0 == 5)
        }
    }

    @Test("withLatestFrom pairs each value with the other signal's latest")
    func withLatestFromPairs() {
        onTestScheduler {
            let taps = Callbacker<Void>()
            let name = ReadWriteSignal("a")
            let log = events(of: Signal(callbacker: taps).withLatestFrom(name)) {
                taps.callAll()
                name.value = "b"
                name.value = "c"
                taps.callAll()
            }
            #expect(log == ["a", "c"])
            let values = Callbacker<Int>()
            let paired = Signal(callbacker: values).withLatestFrom(Signal(callbacker: taps).map { "t" })
            let pairedLog = events(of: paired.map { "\($0)\($1)" }) {
                values.callAll(with: 1)
                taps.callAll()
                values.callAll(with: 2)
            }
            #expect(pairedLog == ["2t"])
        }
    }

    @Test("flatMapLatest follows the latest inner signal and drops the previous one")
    func flatMapLatestSwitches() {
        onTestScheduler {
            let outer = Callbacker<String>()
            let inners = ["a": Callbacker<Int>(), "b": Callbacker<Int>()]
            let flattened = Signal(callbacker: outer).flatMapLatest { key in Signal(callbacker: inners[key]!) }
            let log = events(of: flattened) {
                outer.callAll(with: "a")
                inners["a"]!.callAll(with: 1)
                outer.callAll(with: "b")
                inners["a"]!.callAll(with: 2)
                inners["b"]!.callAll(with: 3)
            }
            #expect(log == ["1", "3"])
            #expect(inners["a"]!.isEmpty && inners["b"]!.isEmpty)

            let selected = ReadWriteSignal(0)
            let sources = [ReadWriteSignal(10), ReadWriteSignal(20)]
            let current: ReadWriteSignal<Int> = selected.flatMapLatest { sources[$0] }
            #expect(current.value == 10)
            selected.value = 1
            #expect(current.value == 20)
        }
    }

    @Test("shared() runs the upstream once for overlapping listeners and again after they all left")
    func sharedRunsOnce() {
        onTestScheduler {
            let starts = Mutex(0)
            let callbacker = Callbacker<Int>()
            let signal = Signal(options: []) { callback in
                starts.withLock { $0 += 1 }
                return callbacker.addCallback(callback)
            }.shared()
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            let a = signal.onValue { first.append($0) }
            let b = signal.onValue { second.append($0) }
            callbacker.callAll(with: 1)
            #expect(starts.withLock { $0 } == 1)
            a.dispose()
            b.dispose()
            #expect(callbacker.isEmpty)
            let c = signal.onValue { first.append($0) }
            #expect(starts.withLock { $0 } == 2)
            c.dispose()
            #expect(first.elements == [1] && second.elements == [1])
        }
    }

    @Test("wait(until:) holds the last value while the gate is closed and releases it when it opens")
    func waitUntilHolds() {
        onTestScheduler {
            let values = Callbacker<Int>()
            let isOpen = ReadWriteSignal(false)
            let log = events(of: Signal(callbacker: values).wait(until: isOpen.readOnly())) {
                values.callAll(with: 1)
                values.callAll(with: 2)
                isOpen.value = true
                values.callAll(with: 3)
                isOpen.value = false
                values.callAll(with: 4)
            }
            #expect(log == ["2", "3"])
        }
    }

    @Test("listeners: onFirstValue, onValueDisposePrevious, bindTo a signal, a closure and a key path")
    func listeners() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let first = Recorder<Int>()
            let bag = DisposeBag()
            bag += signal.onFirstValue { first.append($0) }
            let target = ReadWriteSignal(0)
            bag += signal.bindTo(target)
            let closure = Recorder<Int>()
            bag += signal.bindTo { closure.append($0) }
            final class Model: @unchecked Sendable { var count = 0 }
            let model = Model()
            bag += signal.bindTo(model, \.count)
            let disposed = Recorder<Int>()
            bag += signal.onValueDisposePrevious { value in Disposer { disposed.append(value) } }
            callbacker.callAll(with: 1)
            callbacker.callAll(with: 2)
            #expect(first.elements == [1])
            #expect(target.value == 2)
            #expect(closure.elements == [1, 2])
            #expect(model.count == 2)
            #expect(disposed.elements == [1])
            bag.dispose()
            #expect(disposed.elements == [1, 2])
            #expect(callbacker.isEmpty)
        }
    }

    @Test("a ReadWriteSignal: willSet and didSet around each write, key-path views write back, bidirectional bindings settle")
    func readWriteSignal() {
        onTestScheduler {
            let log = Recorder<String>()
            let signal = ReadWriteSignal(1, willSet: { log.append("will \($0)") }, didSet: { log.append("did \($0)") })
            let listener = signal.onValue { log.append("value \($0)") }
            signal.value = 2
            #expect(log.elements == ["will 2", "value 2", "did 2"])
            listener.dispose()

            struct Point: Sendable { var x = 0, y = 0 }
            let point = ReadWriteSignal(Point())
            let x = point[\.x]
            x.value = 5
            #expect(point.value.x == 5)

            let left = ReadWriteSignal(1)
            let right = ReadWriteSignal(2)
            let binding = left.bidirectionallyBindTo(right)
            left.value = 3
            #expect(right.value == 3)
            right.value = 4
            #expect(left.value == 4)
            binding.dispose()
            let flag = ReadWriteSignal(false)
            flag.toggle()
            #expect(flag.value)
        }
    }

    @Test("OrderedCallbacker calls in order, each after the previous future")
    func orderedCallbacker() {
        onTestScheduler {
            let callbacker = OrderedCallbacker<Int, String>()
            let log = Recorder<String>()
            let bag = DisposeBag()
            bag += callbacker.addCallback({ value in log.append("2 \(value)") }, orderedBy: 2)
            bag += callbacker.addCallback({ value -> Future<Void> in
                log.append("1 \(value)")
                return Future()
            }, orderedBy: 1)
            callbacker.callAll(with: "go")
            #expect(log.elements == ["1 go", "2 go"])
            bag.dispose()
            #expect(callbacker.isEmpty)
        }
    }
}
