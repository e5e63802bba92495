import Flow
import FlowTesting
import Synchronization
import Testing

/// Marble diagrams on a virtual clock: each character is one virtual second; a digit or letter is a
/// value signalled at that second, `|` the end, `-` nothing. Several events in one second are written
/// in parentheses: `(3|)`.
private struct Marbles {
    let clock = VirtualTimeScheduler()
    var scheduler: Scheduler { clock.scheduler }

    /// A finite signal that signals `diagram`'s values and end at their times, from when it is listened to.
    func input(_ diagram: String) -> FiniteSignal<String> {
        let scheduler = self.scheduler
        return FiniteSignal(options: []) { callback in
            let bag = DisposeBag()
            for (second, character) in diagram.enumerated() where character != "-" {
                bag += scheduler.async(after: Double(second)) {
                    callback(character == "|" ? .end : .value(String(character)))
                }
            }
            return bag
        }
    }

    /// Listens to `signal` on the clock for `seconds` virtual seconds and draws what arrived.
    func output<Kind>(of signal: CoreSignal<Kind, String>, over seconds: Int) -> String {
        let arrivals = Recorder<(Int, String)>()
        let clock = self.clock
        let listener = FiniteSignal(signal).onEvent(on: scheduler) { event in
            let second = Int(clock.now / .seconds(1))
            arrivals.append((second, event.isEnd ? "|" : event.value ?? "?"))
        }
        clock.advance(by: .seconds(seconds))
        listener.dispose()
        return (0..<seconds).map { second in
            let here = arrivals.elements.filter { $0.0 == second }.map(\.1)
            switch here.count {
            case 0: return "-"
            case 1: return here[0]
            default: return "(" + here.joined() + ")"
            }
        }.joined()
    }
}

@Suite("Signals over time, as marble diagrams on virtual time")
struct SignalTimeTests {
    @Test("debounce(2): a value passes once 2 s go by without a newer one; the end passes at once")
    func debounce() {
        let marbles = Marbles()
        let input = marbles.input("-1--23---45--6---|")
        let output = marbles.output(of: input.debounce(on: marbles.scheduler, 2), over: 18)
        #expect(output == "---1---3----5--6-|")
    }

    @Test("delay(by: 2): every event, the end included, 2 s later")
    func delay() {
        let marbles = Marbles()
        let output = marbles.output(of: marbles.input("-1-2--3|").delay(on: marbles.scheduler, by: 2), over: 10)
        #expect(output == "---1-2--3|")
    }

    @Test("throttle(3): the first value at once, then the last of each interval at its end")
    func throttle() {
        let marbles = Marbles()
        let output = marbles.output(of: marbles.input("-12-3---4567-|").throttle(on: marbles.scheduler, 3), over: 14)
        #expect(output == "-1--3---4--7-|")
    }

    @Test("Signal(every: 2, delay: 1) ticks at 1, 3, 5…; take(first: 3) ends with the third tick")
    func every() {
        let marbles = Marbles()
        let ticks = Signal(on: marbles.scheduler, every: 2, delay: 1).enumerate().map(on: .none) { "\($0.0)" }.take(first: 3)
        #expect(marbles.output(of: ticks, over: 9) == "-0-1-(2|)---")
        let plain = Signal(on: marbles.scheduler, every: 3).map(on: .none) { "x" }
        #expect(Marbles().output(of: FiniteSignal(plain), over: 1) == "-")
        let again = Marbles()
        let everyThree = Signal(on: again.scheduler, every: 3).map(on: .none) { "x" }
        #expect(again.output(of: everyThree, over: 10) == "---x--x--x")
    }

    @Test("Signal(after: 3) signals once, 3 s after listening starts")
    func after() {
        let marbles = Marbles()
        #expect(marbles.output(of: Signal(on: marbles.scheduler, after: 3).map(on: .none) { "x" }, over: 6) == "---x--")
    }

    @Test("disposing a listener of Signal(every:) stops its timer")
    func disposingStopsTheTimer() {
        let clock = VirtualTimeScheduler()
        let ticks = Mutex(0)
        let listener = Signal(on: clock.scheduler, every: 1).onValue(on: clock.scheduler) { ticks.withLock { $0 += 1 } }
        clock.advance(by: .seconds(3))
        listener.dispose()
        clock.advance(by: .seconds(3))
        #expect(ticks.withLock { $0 } == 3)
        #expect(clock.pendingCount == 0)
    }
}
