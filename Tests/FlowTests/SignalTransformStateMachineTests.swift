import Testing

@testable import Flow

/// The state machines of the stateful signal transforms, driven directly: each event's action,
/// without signals, threads or locks.
@Suite("Signal transform state machines")
struct SignalTransformStateMachineTests {
    @Test("take(first: 2) passes two values, ends with the second, then drops values and the upstream's end")
    func takeFirstEndsWithTheLastValue() {
        var machine = TakeFirstStateMachine(count: 2)
        #expect(machine.didStart() == false)
        #expect(machine.receiveValue() == .pass)
        #expect(machine.receiveValue() == .passThenEnd)
        #expect(machine.receiveValue() == .drop)
        #expect(machine.receiveEnd() == false)
    }

    @Test("take(first: 0) ends once, at the start, and passes nothing after")
    func takeFirstZeroEndsAtTheStart() {
        var machine = TakeFirstStateMachine(count: 0)
        #expect(machine.receiveValue() == .drop)  // a value before the start passes nothing either
        #expect(machine.didStart() == true)
        #expect(machine.didStart() == false)
        #expect(machine.receiveValue() == .drop)
        #expect(machine.receiveEnd() == false)
    }

    @Test("take(first:) passes the upstream's end once, when it comes before the count")
    func takeFirstPassesAnEarlyEnd() {
        var machine = TakeFirstStateMachine(count: 3)
        #expect(machine.receiveValue() == .pass)
        #expect(machine.receiveEnd() == true)
        #expect(machine.receiveEnd() == false)
        #expect(machine.receiveValue() == .drop)
    }

    @Test("take(while:) ends once: the first end is sent, later ones are not")
    func takeWhileEndsOnce() {
        var machine = TakeWhileStateMachine()
        #expect(machine.isTaking)
        #expect(machine.end() == true)
        #expect(!machine.isTaking)
        #expect(machine.end() == false)
    }

    @Test("skip(first: 2) drops two values and passes the rest; a negative count drops none")
    func skipFirstDropsTheCount() {
        var machine = SkipFirstStateMachine(count: 2)
        #expect(machine.receiveValue() == false)
        #expect(machine.receiveValue() == false)
        #expect(machine.receiveValue() == true)
        #expect(machine.receiveValue() == true)
        var negative = SkipFirstStateMachine(count: -1)
        #expect(negative.receiveValue() == true)
    }

    @Test("skip(until:) asks until told to pass, then passes without asking")
    func skipUntilPassesForGood() {
        var machine = SkipUntilStateMachine()
        #expect(!machine.isPassing)
        machine.startPassing()
        #expect(machine.isPassing)
    }

    @Test("latestTwo/distinct: each value gets the one before it; the initial value counts as the first before")
    func previousValueFollowsTheValues() {
        var machine = PreviousValueStateMachine<Int>()
        machine.start(with: nil)
        #expect(machine.receive(1) == nil)
        #expect(machine.receive(2) == 1)
        #expect(machine.receive(3) == 2)
        var readable = PreviousValueStateMachine<Int>()
        readable.start(with: 7)
        #expect(readable.receive(8) == 7)
    }

    @Test("enumerate numbers the values from 0")
    func enumerationCountsFromZero() {
        var machine = EnumerationStateMachine()
        #expect((0..<4).map { _ in machine.receiveValue() } == [0, 1, 2, 3])
    }

    @Test("wait(until:) holds the last value while closed, releases it once on opening, passes values while open")
    func heldUntilOpenReleasesTheLastHeldValue() {
        var machine = HeldUntilOpenStateMachine<Int>()
        #expect(machine.gateChanged(isOpen: false) == nil)
        #expect(machine.receive(1) == nil)
        #expect(machine.receive(2) == nil)
        #expect(machine.gateChanged(isOpen: true) == 2)
        #expect(machine.gateChanged(isOpen: true) == nil)  // still open: nothing more to release
        #expect(machine.receive(3) == 3)
        #expect(machine.gateChanged(isOpen: false) == nil)
        #expect(machine.gateChanged(isOpen: true) == nil)  // nothing arrived while closed
        #expect(machine.gateChanged(isOpen: false) == nil)
        #expect(machine.receive(4) == nil)
        #expect(machine.gateChanged(isOpen: true) == 4)
    }

    @Test("collect hands every value over at the end, in order, and starts empty again")
    func collectionHandsOverAtTheEnd() {
        var machine = CollectionStateMachine<String>()
        machine.receive("a")
        machine.receive("b")
        #expect(machine.finish() == ["a", "b"])
        #expect(machine.finish() == [])
    }

    @Test("combineLatest sends its initial once every input gave one, and values once each input has one")
    func latestValuesWaitForEveryInput() {
        var machine = LatestValuesStateMachine<Int>(inputCount: 2)
        guard case .wait = machine.receiveInitial(1, at: 0) else { Issue.record("should wait for input 1"); return }
        guard case .sendInitial(nil) = machine.receiveInitial(nil, at: 1) else {
            Issue.record("the initial should be sent, without a value: input 1 has none")
            return
        }
        #expect(machine.receiveValue(2, at: 0) == nil)
        #expect(machine.receiveValue(7, at: 1) == [2, 7])
        #expect(machine.receiveValue(3, at: 0) == [3, 7])

        var readable = LatestValuesStateMachine<Int>(inputCount: 2)
        _ = readable.receiveInitial(1, at: 0)
        guard case .sendInitial([1, 5]?) = readable.receiveInitial(5, at: 1) else {
            Issue.record("the initial should combine both current values")
            return
        }
    }
}
