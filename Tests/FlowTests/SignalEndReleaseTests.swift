import Flow
import FlowTestSupport
import Testing

/// A signal that has ended lets go of its listeners' closures at once, as Flow's does: what they
/// capture is freed while the caller still holds the disposable the listener call returned.
@Suite("Signals let go of their listeners at the end")
struct SignalEndReleaseTests {
    /// A finite signal whose events the test sends, through the callback its producer got.
    private final class Source: Sendable {
        let send = Shared<(@Sendable (Event<Int>) -> Void)?>(nil)

        var signal: FiniteSignal<Int> {
            FiniteSignal { [send] callback in
                send.mutate { $0 = callback }
                return Disposer { send.mutate { $0 = nil } }
            }
        }

        func callAll(_ event: Event<Int>) { send.value?(event) }
    }

    @Test("a FiniteSignal's end releases the onValue, onEvent and onEnd closures while their disposables are kept")
    func finiteSignalEnd() {
        onTestScheduler {
            let live = LiveObjects()
            let source = Source()
            let signal = source.signal
            let bag = DisposeBag()
            let values = Recorder<Int>()
            do {
                let forValues = live.make()
                let forEvents = live.make()
                let forEnd = live.make()
                bag += signal.onValue { value in
                    forValues.touch()
                    values.append(value)
                }
                bag += signal.onEvent { _ in forEvents.touch() }
                bag += signal.onEnd { forEnd.touch() }
            }
            source.callAll(.value(1))
            #expect(live.alive == 3)
            source.callAll(.end)
            #expect(live.alive == 0)
            #expect(values.elements == [1])
            #expect(!bag.isEmpty)
            bag.dispose()
        }
    }

    @Test("an end with an error releases the onError closure")
    func finiteSignalError() {
        onTestScheduler {
            let live = LiveObjects()
            let source = Source()
            let disposable: Disposable
            do {
                let captured = live.make()
                disposable = source.signal.onError { _ in captured.touch() }
            }
            source.callAll(.end(TestError(code: 2)))
            #expect(live.alive == 0)
            disposable.dispose()
        }
    }

    @Test("onFirstValue releases its closure once the first value came")
    func onFirstValue() {
        onTestScheduler {
            let live = LiveObjects()
            let callbacker = Callbacker<Int>()
            let firsts = Recorder<Int>()
            let disposable: Disposable
            do {
                let captured = live.make()
                disposable = Signal(callbacker: callbacker).onFirstValue { value in
                    captured.touch()
                    firsts.append(value)
                }
            }
            #expect(live.alive == 1)
            callbacker.callAll(with: 7)
            #expect(live.alive == 0)
            callbacker.callAll(with: 8)
            #expect(firsts.elements == [7])
            #expect(callbacker.isEmpty)
            disposable.dispose()
        }
    }

    @Test("take(first:) releases the listener's closure after the last value it lets through")
    func takeFirst() {
        onTestScheduler {
            let live = LiveObjects()
            let signal = ReadWriteSignal(0)
            let taken = Recorder<Int>()
            let disposable: Disposable
            do {
                let captured = live.make()
                disposable = signal.take(first: 2).onValue { value in
                    captured.touch()
                    taken.append(value)
                }
            }
            signal.value = 1
            #expect(live.alive == 1)
            signal.value = 2
            #expect(live.alive == 0)
            signal.value = 3
            #expect(taken.elements == [1, 2])
            disposable.dispose()
        }
    }

    @Test("a listener on another scheduler releases its closure once the end reaches it there")
    func endDeliveredOnAnotherScheduler() {
        let live = LiveObjects()
        let source = Source()
        let other = Scheduler(label: "signal.end.release")
        let delivered = Shared(false)
        let disposable: Disposable = onTestScheduler {
            let captured = live.make()
            return source.signal.onEnd(on: other) {
                captured.touch()
                delivered.mutate { $0 = true }
            }
        }
        source.callAll(.end)
        other.sync {}  // the end's hop ran before this
        #expect(delivered.value)
        #expect(live.alive == 0)
        disposable.dispose()
    }
    @Test("a finite signal that ends inside its producer releases the producer's and the listener's captures")
    func endInsideTheProducer() {
        onTestScheduler {
            let live = LiveObjects()
            let bag = DisposeBag()
            let values = Shared(0)
            do {
                let inProducer = live.make()
                let inListener = live.make()
                bag += FiniteSignal<Int>(onEvent: { callback in
                    inProducer.touch()
                    callback(.end)
                    return NilDisposer()
                }).onValue { _ in
                    inListener.touch()
                    values.mutate { $0 += 1 }
                }
            }
            #expect(live.alive == 0)
            #expect(values.value == 0)
            bag.dispose()
        }
    }

    @Test("transforms before take(first:) and after it let go of their closures once it ends")
    func transformsAroundTake() {
        onTestScheduler {
            let live = LiveObjects()
            let bag = DisposeBag()
            let collected = Recorder<[Int]>()
            do {
                let inAtValue = live.make()
                let inListener = live.make()
                bag += [1, 2, 3, 4].signal().atValue { _ in inAtValue.touch() }.take(first: 2).collect().onValue {
                    inListener.touch()
                    collected.append($0)
                }
            }
            #expect(collected.elements == [[1, 2]])
            #expect(live.alive == 0)
            bag.dispose()
        }
    }

    @Test("a map before onFirstValue lets go of its closure with the listener's, after the first value")
    func mapBeforeOnFirstValue() {
        onTestScheduler {
            let live = LiveObjects()
            let callbacker = Callbacker<Int>()
            let bag = DisposeBag()
            let firsts = Recorder<Int>()
            do {
                let inMap = live.make()
                let inListener = live.make()
                bag += Signal(callbacker: callbacker).map { value -> Int in
                    inMap.touch()
                    return value * 5
                }.onFirstValue { value in
                    inListener.touch()
                    firsts.append(value)
                }
            }
            callbacker.callAll(with: 2)
            #expect(firsts.elements == [10])
            #expect(live.alive == 0)
            bag.dispose()
        }
    }

    @Test("a listener that never sees an end keeps its closures while its disposable is held")
    func noEndNoRelease() {
        onTestScheduler {
            let live = LiveObjects()
            let callbacker = Callbacker<Int>()
            let bag = DisposeBag()
            do {
                let inMap = live.make()
                let inListener = live.make()
                bag += Signal(callbacker: callbacker).map { value -> Int in
                    inMap.touch()
                    return value * 5
                }.onValue { _ in inListener.touch() }
            }
            callbacker.callAll(with: 2)
            #expect(live.alive == 2)
            bag.dispose()
            #expect(live.alive == 0)
        }
    }
}
