import Flow
import Synchronization
import Testing

/// The signal rows of the misuse matrix (Docs/MisuseMatrix.md): a stop with a message, or a documented
/// outcome. Stops are checked in a child process (an exit test), with the message the program printed.
@Suite("Misuse: signals")
struct SignalMisuseTests {
    @Test("sending a value from inside a signal's own clean-up stops the program with a message")
    func sendingFromTheCleanUpStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let signal = Signal<Int> { callback in
                Disposer { callback(1) }
            }
            let listener = signal.onValue(on: .none) { _ in }
            listener.dispose()
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("a value was sent from inside the signal's own clean-up"))
    }

    @Test("take(first:) with a negative count stops the program with a message")
    func negativeTakeStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Signal<Int>().take(first: -1)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("take(first:): the count must not be negative"))
    }

    @Test("a negative or infinite debounce delay stops the program with a message")
    func badDebounceStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = Signal<Int>().debounce(on: .none, -1)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("debounce: the delay must be a finite number of seconds"))
    }

    @Test("documented: writing a ReadWriteSignal from its own callback changes the value at once and delivers the new value after the callback, never inside it")
    func reentrantWriteIsQueued() {
        let signal = ReadWriteSignal(0)
        let log = Mutex<[String]>([])
        let listener = signal.onValue(on: .none) { value in
            log.withLock { $0.append("start \(value)") }
            if value < 3 { signal.value = value + 1 }
            log.withLock { $0.append("end \(value) (now \(signal.value))") }
        }
        signal.value = 1
        listener.dispose()
        #expect(log.withLock { $0 } == [
            "start 1", "end 1 (now 2)", "start 2", "end 2 (now 3)", "start 3", "end 3 (now 3)",
        ])
    }

    @Test("documented: a listener that starts after a finite signal ended runs its producer again; a callbacker's ended signal stays silent")
    func listeningAfterTheEnd() {
        let callbacker = Callbacker<Event<Int>>()
        let signal = FiniteSignal(callbacker: callbacker)
        let first = Mutex<[String]>([])
        let bag = DisposeBag()
        bag += signal.onEvent(on: .none) { event in first.withLock { $0.append("\(event.isEnd ? "end" : "value")") } }
        callbacker.callAll(with: .value(1))
        callbacker.callAll(with: .end)
        let late = Mutex<[String]>([])
        bag += signal.onEvent(on: .none) { event in late.withLock { $0.append("\(event.isEnd ? "end" : "value")") } }
        #expect(late.withLock { $0 }.isEmpty, "no replay of the earlier end")
        callbacker.callAll(with: .value(2))
        #expect(late.withLock { $0 } == ["value"])
        #expect(first.withLock { $0 } == ["value", "end"])
        bag.dispose()
    }
}
