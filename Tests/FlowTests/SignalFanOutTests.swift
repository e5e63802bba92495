import Dispatch
import Flow
import Synchronization
import Testing

/// The delivery path of a Callbacker-backed signal with many listeners: each `onValue` listener is one
/// node in the callbacker's list, and `callAll` delivers each value to a snapshot of the list.
@Suite("Signals: fan-out from a Callbacker")
struct SignalFanOutTests {
    @Test("a listener disposed by an earlier listener's callback gets nothing more, not even the value being delivered")
    func disposedDuringADeliveryGetsNothingMore() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            let secondListener = Mutex<Disposable?>(nil)
            let firstListener = signal.onValue { value in
                first.append(value)
                if value == 2 { secondListener.withLock { $0 }?.dispose() }
            }
            secondListener.withLock { $0 = signal.onValue { second.append($0) } }
            for value in 1...3 { callbacker.callAll(with: value) }
            firstListener.dispose()
            #expect(first.elements == [1, 2, 3])
            #expect(second.elements == [1])
            #expect(callbacker.isEmpty)
        }
    }

    @Test("with a listener present, a value sent from a callback waits until every listener had the current one")
    func valueSentFromACallbackWaitsForTheWholeRound() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let calls = Recorder<String>()
            let bag = DisposeBag()
            bag += signal.onValue { value in
                calls.append("a\(value)")
                if value == 1 { callbacker.callAll(with: 2) }
            }
            bag += signal.onValue { calls.append("b\($0)") }
            callbacker.callAll(with: 1)
            bag.dispose()
            #expect(calls.elements == ["a1", "b1", "a2", "b2"])
        }
    }

    @Test("plain Callbacker callbacks run nested when a callback calls callAll, as Flow's do")
    func plainCallbacksRunNested() {
        let callbacker = Callbacker<Int>()
        let calls = Recorder<String>()
        let first = callbacker.addCallback { value in
            calls.append("a\(value)")
            if value == 1 { callbacker.callAll(with: 2) }
        }
        let second = callbacker.addCallback { calls.append("b\($0)") }
        callbacker.callAll(with: 1)
        first.dispose()
        second.dispose()
        #expect(calls.elements == ["a1", "a2", "b2", "b1"])
        #expect(callbacker.isEmpty)
    }

    @Test("a listener added while a value is delivered gets the values sent after it was added, not that one")
    func listenerAddedDuringADelivery() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let late = Recorder<Int>()
            let bag = DisposeBag()
            bag += signal.onValue { value in
                if value == 1 { bag += signal.onValue { late.append($0) } }
            }
            for value in 1...3 { callbacker.callAll(with: value) }
            bag.dispose()
            #expect(late.elements == [2, 3])
            #expect(callbacker.isEmpty)
        }
    }

    @Test("200 listeners disposed in a scattered order: the others keep getting every value in order")
    func scatteredDisposalKeepsTheRest() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let count = 200
            let received = (0..<count).map { _ in Recorder<Int>() }
            var listeners: [Disposable?] = (0..<count).map { index in
                signal.onValue { received[index].append($0) }
            }
            var disposedAt = [Int?](repeating: nil, count: count)
            let disposalOrder = (0..<count).filter { $0 % 3 != 1 }.shuffled()
            for (step, index) in disposalOrder.enumerated() {
                callbacker.callAll(with: step)
                listeners[index]?.dispose()
                listeners[index] = nil
                disposedAt[index] = step
            }
            callbacker.callAll(with: -1)
            for index in 0..<count {
                let expected = disposedAt[index].map { Array(0...$0) } ?? Array(0..<disposalOrder.count) + [-1]
                #expect(received[index].elements == expected, "listener \(index)")
            }
            #expect(!callbacker.isEmpty)
            listeners = []
            #expect(callbacker.isEmpty)
        }
    }

    @Test("a disposed listener's handle, still kept, holds no closure; letting go of an undisposed one releases its closure")
    func handlesReleaseTheirClosures() {
        let live = LiveObjects()
        let callbacker = Callbacker<Int>()
        var kept: Disposable?
        onTestScheduler {
            let signal = Signal(callbacker: callbacker)
            let disposedObject = live.make()
            kept = signal.onValue { _ in disposedObject.touch() }
            kept?.dispose()
            do {
                let droppedObject = live.make()
                _ = signal.onValue { _ in droppedObject.touch() }
            }
            callbacker.callAll(with: 1)
        }
        #expect(live.alive == 0, "a listener's closure outlived its disposal")
        #expect(callbacker.isEmpty)
        _ = kept
    }

    @Test("listeners on another scheduler get the values in order there; those on the sending scheduler get them at once")
    func mixedSchedulers() {
        let callbacker = Callbacker<Int>()
        let atOnce = Recorder<Int>()
        let onLoop = Recorder<Int>()
        let offLoop = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        let bag = DisposeBag()
        onTestScheduler {
            let signal = Signal(callbacker: callbacker)
            bag += signal.onValue { atOnce.append($0) }
            bag += signal.onValue(on: signalTestLoop.scheduler) { value in
                if !signalTestLoop.scheduler.isExecuting { offLoop.add(1, ordering: .relaxed) }
                onLoop.append(value)
                if value == 100 { done.signal() }
            }
            for value in 1...100 {
                callbacker.callAll(with: value)
                #expect(atOnce.elements.last == value)
            }
        }
        expectSignal(done, "the 100th value on the loop")
        bag.dispose()
        #expect(onLoop.elements == Array(1...100))
        #expect(offLoop.load(ordering: .relaxed) == 0)
    }

    @Test("a ReadWriteSignal's onValue listeners take the same path: each write in turn, a write from a callback after the round")
    func readWriteSignalListeners() {
        onTestScheduler {
            let volume = ReadWriteSignal(0)
            let calls = Recorder<String>()
            let seenInside = Recorder<Int>()
            let bag = DisposeBag()
            bag += volume.onValue { value in
                calls.append("a\(value)")
                if value == 1 {
                    volume.value = 2
                    seenInside.append(volume.value)
                }
            }
            bag += volume.onValue { calls.append("b\($0)") }
            bag += volume.atOnce().onValue { calls.append("c\($0)") }
            volume.value = 1
            bag.dispose()
            #expect(calls.elements == ["c0", "a1", "b1", "c1", "a2", "b2", "c2"])
            #expect(seenInside.elements == [2], "the value changes at once")
            #expect(volume.value == 2)
        }
    }

    @Test("a listener that lets go of its own handle inside its callback gets nothing more, and its closure is released")
    func droppingOwnHandleInsideTheCallback() {
        let live = LiveObjects()
        let callbacker = Callbacker<Int>()
        let received = Recorder<Int>()
        onTestScheduler {
            let signal = Signal(callbacker: callbacker)
            let handle = Mutex<Disposable?>(nil)
            do {
                let tracked = live.make()
                let listener = signal.onValue { value in
                    tracked.touch()
                    received.append(value)
                    if value == 2 {
                        let dropped = handle.withLock { $0.take() }
                        _ = dropped
                    }
                }
                handle.withLock { $0 = listener }
            }
            for value in 1...3 { callbacker.callAll(with: value) }
        }
        #expect(received.elements == [1, 2])
        #expect(callbacker.isEmpty)
        #expect(live.alive == 0, "the closure outlived its listener")
    }

    @Test("a callback that lets go of later listeners' handles: they get nothing of that value, in its batch or a later one, and their closures go at once")
    func droppingLaterHandlesInsideACallback() {
        let live = LiveObjects()
        let callbacker = Callbacker<Int>()
        let count = 40  // more than one batch of registrations
        let received = (0..<count).map { _ in Recorder<Int>() }
        let aliveAfterDropping = Recorder<Int>()
        onTestScheduler {
            let signal = Signal(callbacker: callbacker)
            let handles = Mutex<[Disposable?]>([])
            for index in 0..<count {
                let tracked = live.make()
                let listener = signal.onValue { value in
                    tracked.touch()
                    received[index].append(value)
                    if index == 0, value == 2 {
                        handles.withLock { handles in
                            handles[5] = nil
                            handles[35] = nil
                        }
                        aliveAfterDropping.append(live.alive)
                    }
                }
                handles.withLock { $0.append(listener) }
            }
            for value in 1...3 { callbacker.callAll(with: value) }
            handles.withLock { $0 = [] }
        }
        for index in 0..<count {
            #expect(received[index].elements == (index == 5 || index == 35 ? [1] : [1, 2, 3]), "listener \(index)")
        }
        #expect(aliveAfterDropping.elements == [count - 2], "the dropped listeners' closures were still alive")
        #expect(callbacker.isEmpty)
        #expect(live.alive == 0)
    }

    @Test("a value sent during a delivery reaches the listeners registered when it was sent that are still registered at its turn")
    func valueSentDuringADeliveryReachesThoseRegisteredWhenSent() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let received = (0..<11).map { _ in Recorder<Int>() }
            let handles = Mutex<[Disposable?]>([])
            for index in 0..<10 {
                let listener = signal.onValue { value in
                    received[index].append(value)
                    guard value == 1 else { return }
                    if index == 0 {
                        // Eight removals leave more holes than registrations: the list is compacted
                        // between two values, and the queued values' bounds must follow.
                        let dropped = handles.withLock { handles in (1...8).map { handles[$0].take() } }
                        _ = dropped
                        callbacker.callAll(with: 2)
                        let late = signal.onValue { received[10].append($0) }
                        handles.withLock { $0.append(late) }
                        callbacker.callAll(with: 3)
                    } else if index == 9 {
                        let dropped = handles.withLock { $0[9].take() }
                        _ = dropped
                    }
                }
                handles.withLock { $0.append(listener) }
            }
            callbacker.callAll(with: 1)
            callbacker.callAll(with: 4)
            #expect(received[0].elements == [1, 2, 3, 4])
            for index in 1...8 { #expect(received[index].elements == [], "listener \(index)") }
            #expect(received[9].elements == [1], "registered when 2 and 3 were sent, gone before their turn")
            #expect(received[10].elements == [3, 4], "added after 2 was sent")
            handles.withLock { $0 = [] }
            #expect(callbacker.isEmpty)
        }
    }

    @Test("a value on its way to another scheduler is dropped if the listener was let go of meanwhile, and reaches one still registered after a compaction")
    func hopAfterTheListenerWasReleased() {
        let live = LiveObjects()
        let callbacker = Callbacker<Int>()
        let queue = DispatchQueue(label: "signal.tests.hop")
        let queueScheduler = Scheduler(queue: queue)
        let dropped = Recorder<Int>()
        let kept = Recorder<Int>()
        onTestScheduler {
            let signal = Signal(callbacker: callbacker)
            var others: [Disposable] = (0..<10).map { _ in signal.onValue { _ in } }
            var droppedListener: Disposable? = {
                let tracked = live.make()
                return signal.onValue(on: queueScheduler) { value in
                    tracked.touch()
                    dropped.append(value)
                }
            }()
            let keptListener = signal.onValue(on: queueScheduler) { kept.append($0) }
            queue.suspend()
            callbacker.callAll(with: 1)  // two hops wait on the queue
            droppedListener = nil
            #expect(live.alive == 1, "the hop keeps the closure until it runs")
            others = []  // the list is compacted: the kept listener moves
            queue.resume()
            queue.sync {}
            #expect(dropped.elements == [])
            #expect(kept.elements == [1])
            #expect(live.alive == 0, "the hop let go of the closure")
            keptListener.dispose()
            _ = (others, droppedListener)
        }
        #expect(callbacker.isEmpty)
    }

    @Test("a listener's closure is released as soon as its handle is let go of, or disposed while kept")
    func closureReleasedWithTheHandle() {
        let live = LiveObjects()
        let callbacker = Callbacker<Int>()
        onTestScheduler {
            let signal = Signal(callbacker: callbacker)
            var listener: Disposable? = {
                let tracked = live.make()
                return signal.onValue { _ in tracked.touch() }
            }()
            #expect(live.alive == 1)
            listener = nil
            #expect(live.alive == 0, "letting go of the handle kept the closure")
            let kept: Disposable = {
                let tracked = live.make()
                return signal.onValue { _ in tracked.touch() }
            }()
            kept.dispose()
            #expect(live.alive == 0, "a disposed, kept handle held its closure")
            _ = listener
        }
        #expect(callbacker.isEmpty)
    }
}
