import Dispatch
import Flow
import Foundation
import Synchronization
import Testing

/// What one listener saw: per sending thread, the last sequence number and how many values, checked
/// as values arrive (a listener's values come one at a time, so the checks need no more than its lock).
private final class SequenceCheck: Sendable {
    private struct State {
        var last = Array(repeating: -1, count: stressThreadCount)
        var counts = Array(repeating: 0, count: stressThreadCount)
        var outOfOrder = 0
        var wrongPlace = 0
    }

    private let state = Guarded(State())
    /// Whether every value must arrive (a listener present for the whole run) or gaps are allowed (one
    /// added and removed meanwhile).
    let isComplete: Bool
    let place: Place?

    init(isComplete: Bool, place: Place? = nil) {
        self.isComplete = isComplete
        self.place = place
    }

    func receive(_ value: Int, places: StressPlaces) {
        let sender = value >> 32
        let sequence = value & 0xFFFF_FFFF
        let isRightPlace = place.map { places.isCurrent($0) } ?? true
        state.withLock { state in
            let expected = state.last[sender] + 1
            if isComplete ? sequence != expected : sequence < expected { state.outOfOrder += 1 }
            state.last[sender] = sequence
            state.counts[sender] += 1
            if !isRightPlace { state.wrongPlace += 1 }
        }
    }

    var total: Int { state.withLock { $0.counts.reduce(0, +) } }
    var outOfOrder: Int { state.withLock { $0.outOfOrder } }
    var wrongPlace: Int { state.withLock { $0.wrongPlace } }
    var counts: [Int] { state.withLock { $0.counts } }
}

/// Eight threads send into one signal while listeners come and go: each value reaches each listener
/// present for it exactly once, in each sender's order, on the listener's scheduler. Run under
/// ThreadSanitizer by `Scripts/sanitizers`.
@Suite("Stress: eight threads sending into one signal while listeners come and go", .serialized)
struct SignalStressTests {
    /// Values each thread sends: a two-hundredth of the stress operations (500 by default), so that
    /// the suite stays within a few seconds under ThreadSanitizer (2,000 took 30 s there).
    private let valuesPerThread = max(200, stressOperationsPerThread / 200)

    @Test(
        "every value reaches every listener present for it exactly once, in order, on its scheduler",
        arguments: ["callbacker", "shared producer"])
    func eightSendersWithChurningListeners(kind: String) {
        let places = StressPlaces()
        defer { places.shutdown() }
        let callbacker = Callbacker<Int>()
        let signal: Signal<Int> = kind == "callbacker"
            ? Signal(callbacker: callbacker)
            : Signal(options: .shared) { callback in callbacker.addCallback(callback) }

        let persistent = [
            SequenceCheck(isComplete: true, place: .anywhere),
            SequenceCheck(isComplete: true, place: .loopA),
            SequenceCheck(isComplete: true, place: .queue),
        ]
        let bag = DisposeBag()
        for check in persistent {
            bag += signal.onValue(on: places.scheduler(check.place!)) { check.receive($0, places: places) }
        }
        let churned = Guarded<[SequenceCheck]>([])
        let valuesPerThread = self.valuesPerThread

        runOnThreads(stressThreadCount) { index in
            var random = SplitMix64(state: UInt64(index) &+ 0x5167)
            var listener: Disposable?
            for sequence in 0..<valuesPerThread {
                callbacker.callAll(with: (index << 32) | sequence)
                if sequence % 16 == 0 {
                    listener?.dispose()
                    let place = Place.allCases.randomElement(using: &random)!
                    let check = SequenceCheck(isComplete: false, place: place)
                    churned.withLock { $0.append(check) }
                    listener = signal.onValue(on: places.scheduler(place)) { check.receive($0, places: places) }
                }
            }
            listener?.dispose()
        }

        let expected = stressThreadCount * valuesPerThread
        waitUntil("the listeners on loops and queues got every value", meanwhile: { places.drain() }) {
            persistent.allSatisfy { $0.total == expected }
        }
        bag.dispose()
        for check in persistent {
            #expect(check.counts == Array(repeating: valuesPerThread, count: stressThreadCount))
            #expect(check.outOfOrder == 0, "a value was repeated, lost or out of order for a listener on \(check.place!)")
            #expect(check.wrongPlace == 0, "a value reached a listener on \(check.place!) elsewhere")
        }
        for check in churned.withLock({ $0 }) {
            #expect(check.outOfOrder == 0, "a value was repeated or out of order for a listener that came and went")
            #expect(check.wrongPlace == 0)
        }
        waitUntil("every registration was removed", meanwhile: { places.drain() }) { callbacker.isEmpty }
    }

    @Test("listeners let go of on other threads while values are delivered: no use of a freed listener, every closure released")
    func listenersDroppedFromOtherThreadsDuringDelivery() {
        let places = StressPlaces()
        defer { places.shutdown() }
        let callbacker = Callbacker<Int>()
        let signal = Signal(callbacker: callbacker)
        let persistent = SequenceCheck(isComplete: true, place: .anywhere)
        let bag = DisposeBag()
        bag += signal.onValue(on: .none) { persistent.receive($0, places: places) }
        let liveClosures = LiveObjects()
        let sendersDone = Atomic<Int>(0)
        let senders = 2
        let valuesPerSender = self.valuesPerThread * 4

        runOnThreads(6) { index in
            if index < senders {
                for sequence in 0..<valuesPerSender { callbacker.callAll(with: (index << 32) | sequence) }
                sendersDone.add(1, ordering: .releasing)
                return
            }
            var random = SplitMix64(state: UInt64(index) &+ 0x0D20)
            var rounds = 0
            while rounds < 200 || sendersDone.load(ordering: .acquiring) < senders {
                rounds += 1
                let place = Place.allCases.randomElement(using: &random)!
                let check = SequenceCheck(isComplete: false, place: place)
                let token = liveClosures.make()
                var listener: Disposable? = signal.onValue(on: places.scheduler(place)) { value in
                    token.touch()
                    check.receive(value, places: places)
                }
                if random.next() % 4 == 0 { sched_yield() }
                listener = nil  // let go of, not disposed: its deinit unregisters it
                _ = listener
                #expect(check.outOfOrder == 0)
                #expect(check.wrongPlace == 0)
            }
        }

        waitUntil("the persistent listener got every value") { persistent.total == senders * valuesPerSender }
        waitUntil("every dropped listener's closure was released", meanwhile: { places.drain() }) {
            liveClosures.alive == 0
        }
        bag.dispose()
        #expect(persistent.outOfOrder == 0)
        #expect(callbacker.isEmpty)
    }
}
