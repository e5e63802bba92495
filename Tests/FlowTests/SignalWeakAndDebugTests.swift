import Flow
import Synchronization
import Testing

private final class Owner: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}

@Suite("Signals: with(weak:) and debug")
struct SignalWeakAndDebugTests {
    @Test("with(weak:) pairs each value with the object, and stops listening at the first event after the object is freed")
    func withWeakStopsAfterTheObjectIsFreed() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let received = Recorder<String>()
            var owner: Owner? = Owner("a")
            let listener = Signal(callbacker: callbacker).with(weak: owner!).onValue { value, owner in
                received.append("\(value)\(owner.name)")
            }
            callbacker.callAll(with: 1)
            callbacker.callAll(with: 2)
            #expect(!callbacker.isEmpty)
            owner = nil
            callbacker.callAll(with: 3)
            callbacker.callAll(with: 4)
            #expect(received.elements == ["1a", "2a"])
            #expect(callbacker.isEmpty, "the listener was not disposed once the object was freed")
            listener.dispose()
        }
    }

    @Test("with(weak:) keeps a current value, paired with the object, and does not keep the object alive")
    func withWeakOnAReadSignal() {
        onTestScheduler {
            let count = ReadWriteSignal(1)
            var owner: Owner? = Owner("a")
            let paired: ReadSignal<(Int, Owner)> = count.readOnly().with(weak: owner!)
            #expect(paired.value.0 == 1)
            #expect(paired.value.1 === owner)
            let received = Recorder<Int>()
            let listener = paired.onValue { value, _ in received.append(value) }
            count.value = 2
            owner = nil
            count.value = 3
            #expect(received.elements == [2])
            listener.dispose()
        }
    }

    @Test("with(weak:) flattens tuples as Flow does: pairs and triples with weak:, longer tuples with with(_:), Void gives the object")
    func withWeakTupleOverloads() {
        onTestScheduler {
            let owner = Owner("o")
            let taps = Callbacker<Void>()
            let pairs = Callbacker<(Int, String)>()
            let quadruples = Callbacker<(Int, Int, Int, Int)>()
            let received = Recorder<String>()
            let bag = DisposeBag()
            bag += Signal(callbacker: taps).with(weak: owner).onValue { owner in received.append(owner.name) }
            bag += Signal(callbacker: pairs).with(weak: owner).onValue { number, text, owner in
                received.append("\(number)\(text)\(owner.name)")
            }
            bag += Signal(callbacker: quadruples).with(owner).onValue { a, b, c, d, owner in
                received.append("\(a + b + c + d)\(owner.name)")
            }
            taps.callAll()
            pairs.callAll(with: (1, "x"))
            quadruples.callAll(with: (1, 2, 3, 4))
            bag.dispose()
            #expect(received.elements == ["o", "1xo", "10o"])
        }
    }

    @Test("debug prints each event and the disposal, with the time, the call site and the message, and passes events on")
    func debugPrintsEvents() {
        onTestScheduler {
            let lines = Recorder<String>()
            let count = ReadWriteSignal(1)
            let values = Recorder<Int>()
            let line = #line + 1
            let listener = count.debug("count", printer: { lines.append($0) }).onValue { values.append($0) }
            count.value = 2
            listener.dispose()
            #expect(values.elements == [2])
            let printed = lines.elements
            #expect(printed.count == 3)
            let site = "<SignalWeakAndDebugTests.swift:\(line)> (debugPrintsEvents())"
            let expectedEnds = ["\(site): count -> initial(1)", "\(site): count -> event(value(2))", "\(site): count -> disposed"]
            for (printedLine, expectedEnd) in zip(printed, expectedEnds) {
                #expect(printedLine.hasSuffix(": " + expectedEnd), "\(printedLine)")
                let time = printedLine.prefix(12)
                #expect(time.count == 12 && time.allSatisfy { $0.isNumber || $0 == ":" || $0 == "." }, "\(time)")
                #expect(Array(time).enumerated().allSatisfy { index, character in
                    [2, 5].contains(index) ? character == ":" : index == 8 ? character == "." : character.isNumber
                })
            }
        }
    }

    @Test("letting go of the disposable addCallback returned unregisters the callback, as in Flow")
    func releasingAddCallbacksDisposableUnregisters() {
        let callbacker = Callbacker<Int>()
        let received = Recorder<Int>()
        let kept = callbacker.addCallback { received.append($0) }
        do {
            _ = callbacker.addCallback { received.append($0 * 10) }
        }
        callbacker.callAll(with: 1)
        kept.dispose()
        callbacker.callAll(with: 2)
        #expect(received.elements == [1])
        #expect(callbacker.isEmpty)
    }
}
