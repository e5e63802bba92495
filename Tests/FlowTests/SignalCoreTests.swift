import Dispatch
import Flow
import Synchronization
import Testing

@Suite("Signals: delivery, kinds, disposal")
struct SignalCoreTests {
    @Test("a Callbacker-backed signal gives every value to each listener, in order")
    func valuesReachEveryListenerInOrder() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            let bag = DisposeBag()
            bag += signal.onValue { first.append($0) }
            bag += signal.onValue { second.append($0) }
            for value in 1...5 { callbacker.callAll(with: value) }
            callbacker.callAll(6)  // the Signals guide's spelling
            bag.dispose()
            #expect(first.elements == [1, 2, 3, 4, 5, 6])
            #expect(second.elements == [1, 2, 3, 4, 5, 6])
            #expect(callbacker.isEmpty)
        }
    }

    @Test("a Callbacker with many callbacks removed in any order calls the rest in the order added")
    func callbackerRemovalKeepsOrder() {
        let callbacker = Callbacker<Int>()
        let calls = Recorder<Int>()
        var removals = (0..<1000).map { index in callbacker.addCallback { _ in calls.append(index) } }
        for index in stride(from: 999, through: 0, by: -3) { removals[index].dispose() }
        for index in stride(from: 0, to: 1000, by: 2) { removals[index].dispose() }
        let remaining = (0..<1000).filter { !$0.isMultiple(of: 2) && (999 - $0) % 3 != 0 }
        callbacker.callAll(with: 0)
        #expect(calls.elements == remaining)
        #expect(!callbacker.isEmpty)
        for removal in removals { removal.dispose() }
        removals = []
        #expect(callbacker.isEmpty)
    }

    @Test("a listener's callback runs on the scheduler it asked for, in order, when values come from elsewhere")
    func listenerRunsOnItsScheduler() {
        let callbacker = Callbacker<Int>()
        let received = Recorder<Int>()
        let onLoopThread = Atomic<Bool>(true)
        let done = DispatchSemaphore(value: 0)
        let disposable = Signal(callbacker: callbacker).onValue(on: signalTestLoop.scheduler) { value in
            if !signalTestLoop.scheduler.isExecuting { onLoopThread.store(false, ordering: .relaxed) }
            received.append(value)
            if value == 1000 { done.signal() }
        }
        for value in 1...1000 { callbacker.callAll(with: value) }  // from the test's thread
        expectSignal(done, "the 1000th value")
        disposable.dispose()
        #expect(received.elements == Array(1...1000))
        let allOnLoop = onLoopThread.load(ordering: .relaxed)
        #expect(allOnLoop)
    }

    @Test("a value sent from a callback of the same signal is delivered after that callback returns, not inside it")
    func sendingFromACallbackDoesNotRecurse() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let depth = Mutex((current: 0, deepest: 0))
            let last = Mutex(0)
            let disposable = Signal(callbacker: callbacker).onValue { value in
                depth.withLock { $0.current += 1; $0.deepest = max($0.deepest, $0.current) }
                last.withLock { $0 = value }
                if value < 100_000 { callbacker.callAll(with: value + 1) }
                depth.withLock { $0.current -= 1 }
            }
            callbacker.callAll(with: 1)
            disposable.dispose()
            #expect(last.withLock { $0 } == 100_000)
            #expect(depth.withLock { $0.deepest } == 1)
        }
    }

    @Test("Flow's exclusivity example: start(with:) then values and an end sent from the callback give [1, 2]")
    func exclusivityKeepsEventsInOrder() {
        onTestScheduler {
            let callbacker = Callbacker<Event<Int>>()
            let result = Recorder<Int>()
            let disposable = FiniteSignal(callbacker: callbacker).start(with: 1).onValue { value in
                result.append(value)
                callbacker.callAll(with: .value(value + 1))
                callbacker.callAll(with: .end)
            }
            #expect(result.elements == [1, 2])
            disposable.dispose()
        }
    }

    @Test("writing a ReadWriteSignal from its own callback: the value changes at once, the new value follows the running callback")
    func reentrantWriteIsDeliveredAfterTheCallback() {
        onTestScheduler {
            let signal = ReadWriteSignal(1)
            let result = Mutex(0)
            let disposable = signal.distinct().atOnce().onValue { value in
                signal.value = 2
                result.withLock { $0 = value }
            }
            #expect(result.withLock { $0 } == 2)
            #expect(signal.value == 2)
            disposable.dispose()
        }
    }

    @Test("1,000,000 values through 10 transforms: the stack does not grow and nothing is left alive")
    func millionValuesThroughTenTransforms() {
        let live = LiveObjects()
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            var signal = Signal(callbacker: callbacker).map { $0 + 1 }
            for _ in 0..<9 {
                let tracked = live.make()
                signal = signal.map { value in
                    tracked.touch()
                    return value + 1
                }
            }
            let stackDepths = Mutex<(first: UInt, last: UInt)>((0, 0))
            let count = Mutex(0)
            let disposable = signal.onValue { value in
                var marker = 0
                let address = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
                stackDepths.withLock { if $0.first == 0 { $0.first = address }; $0.last = address }
                count.withLock { $0 += 1 }
                _ = value
            }
            for value in 0..<1_000_000 { callbacker.callAll(with: value) }
            disposable.dispose()
            #expect(count.withLock { $0 } == 1_000_000)
            let depths = stackDepths.withLock { $0 }
            // Recursion over a million values would take far more than a few MiB (and overflow). Not an
            // exact match: under AddressSanitizer a local's address is on a "fake stack" that moves.
            let distance = depths.first > depths.last ? depths.first - depths.last : depths.last - depths.first
            #expect(distance < 4 << 20, "the listener ran \(distance) bytes deeper at the end than at the start")
            #expect(callbacker.isEmpty)
            signal = Signal()
        }
        #expect(live.alive == 0)
    }

    @Test("disposing stops delivery at once, runs the producer's clean-up when the last listener goes, and releases every closure")
    func disposalStopsAndReleases() {
        let live = LiveObjects()
        onTestScheduler {
            let starts = Mutex(0)
            let cleanUps = Mutex(0)
            let producerCallback = Mutex<(@Sendable (Int) -> Void)?>(nil)
            let producerObject = live.make()
            let signal = Signal<Int> { callback in
                producerObject.touch()
                starts.withLock { $0 += 1 }
                producerCallback.withLock { $0 = callback }
                return Disposer {
                    cleanUps.withLock { $0 += 1 }
                    producerCallback.withLock { $0 = nil }
                }
            }
            let send: (Int) -> Void = { value in producerCallback.withLock { $0 }?(value) }
            let first = Recorder<Int>()
            let second = Recorder<Int>()
            let firstObject = live.make()
            let secondObject = live.make()
            let firstListener = signal.onValue { firstObject.touch(); first.append($0) }
            let secondListener = signal.onValue { secondObject.touch(); second.append($0) }
            #expect(starts.withLock { $0 } == 1, "listeners that overlap share one run of the producer")
            send(1)
            firstListener.dispose()
            send(2)
            #expect(cleanUps.withLock { $0 } == 0)
            secondListener.dispose()
            #expect(cleanUps.withLock { $0 } == 1)
            send(3)
            #expect(first.elements == [1])
            #expect(second.elements == [1, 2])
        }
        #expect(live.alive == 0, "closures given to the signal and its listeners were not released")
    }

    @Test("disposing a listener from inside its own callback stops the values queued behind it")
    func disposingInsideTheCallback() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let received = Recorder<Int>()
            let holder = Mutex<Disposable?>(nil)
            let listener = Signal(callbacker: callbacker).onValue { value in
                received.append(value)
                callbacker.callAll(with: value + 1)  // queued behind this callback
                holder.withLock { $0 }?.dispose()
            }
            holder.withLock { $0 = listener }
            callbacker.callAll(with: 1)
            callbacker.callAll(with: 10)
            #expect(received.elements == [1])
        }
    }

    @Test("letting go of the disposable a listener call returned stops listening")
    func releasingTheDisposableStops() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let received = Recorder<Int>()
            do {
                let listener = Signal(callbacker: callbacker).onValue { received.append($0) }
                callbacker.callAll(with: 1)
                _ = listener
            }
            callbacker.callAll(with: 2)
            #expect(received.elements == [1])
            #expect(callbacker.isEmpty)
        }
    }

    @Test("a finite signal ends once and delivers nothing after its end")
    func finiteSignalEndsOnce() {
        onTestScheduler {
            let callbacker = Callbacker<Event<Int>>()
            let events = Recorder<String>()
            let ends = Mutex(0)
            let bag = DisposeBag()
            let signal = FiniteSignal(callbacker: callbacker)
            bag += signal.onEvent { events.append(describe($0)) }
            bag += signal.onEnd { ends.withLock { $0 += 1 } }
            callbacker.callAll(with: .value(1))
            callbacker.callAll(with: .end)
            callbacker.callAll(with: .value(2))
            callbacker.callAll(with: .end(TestError()))
            #expect(events.elements == ["1", "end"])
            #expect(ends.withLock { $0 } == 1)
            #expect(callbacker.isEmpty, "the end removed the registrations")
            bag.dispose()
        }
    }

    @Test("take(first: 2) ends after two values and stops listening upstream")
    func takeFirstTwoEndsAfterTwo() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let events = Recorder<String>()
            let disposable = Signal(callbacker: callbacker).take(first: 2).onEvent { events.append(describe($0)) }
            for value in 1...5 { callbacker.callAll(with: value) }
            #expect(events.elements == ["1", "2", "end"])
            #expect(callbacker.isEmpty)
            disposable.dispose()
        }
    }

    @Test("a finite signal's producer runs again for a listener that starts after the end; a sequence's signal replays")
    func listeningAfterTheEnd() {
        onTestScheduler {
            let signal = [1, 2, 3].signal()
            let first = Recorder<String>()
            let second = Recorder<String>()
            let bag = DisposeBag()
            bag += signal.onEvent { first.append(describe($0)) }
            bag += signal.onEvent { second.append(describe($0)) }
            #expect(first.elements == ["1", "2", "3", "end"])
            #expect(second.elements == ["1", "2", "3", "end"])
        }
    }

    @Test("kinds follow Flow's rules: map keeps a current value, filter drops it, readOnly and plain drop access")
    func kindRules() {
        onTestScheduler {
            let count = ReadWriteSignal(2)
            let doubled: ReadSignal<Int> = count.map { $0 * 2 }
            let even: Signal<Int> = count.filter { $0.isMultiple(of: 2) }
            let readOnly: ReadSignal<Int> = count.readOnly()
            let plain: Signal<Int> = count.plain()
            let finite: FiniteSignal<Int> = plain.finite()
            let taken: FiniteSignal<Int> = count.take(first: 1)
            let summed: ReadSignal<Int> = plain.reduce(0, combine: +)
            #expect(doubled.value == 4)
            count.value = 5
            #expect(doubled.value == 10)
            #expect(readOnly.value == 5)
            _ = (even, finite, taken, summed)
            let readable: ReadSignal<Int> = plain.readable(capturing: 7)
            #expect(readable.value == 7)
            let writable: ReadWriteSignal<Int> = readable.writable { _ in }
            #expect(writable.value == 7)
        }
    }
}
