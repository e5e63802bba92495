import Flow
import Synchronization
import Testing

/// A future the test completes by hand.
private final class PendingFuture<Value: Sendable>: Sendable {
    private let completion: Recorder<@Sendable (Result<Value>) -> Void>
    let future: Future<Value>

    init() {
        let completion = Recorder<@Sendable (Result<Value>) -> Void>()
        self.completion = completion
        future = Future { callback in
            completion.append(callback)
            return NilDisposer()
        }
    }

    func complete(with result: Result<Value>) { completion.elements.first?(result) }
}

@Suite("Signals and futures", .checksLiveFutures)
struct SignalFutureTests {
    @Test("signal.future succeeds with the first value, and fails with the end's error or aborted")
    func signalFuture() {
        onTestScheduler {
            let callbacker = Callbacker<Event<Int>>()
            let signal = FiniteSignal(callbacker: callbacker)
            let first = signal.future
            let ended = signal.future
            callbacker.callAll(with: .value(1))
            callbacker.callAll(with: .value(2))
            #expect(first.result?.value == 1)
            #expect(callbacker.isEmpty, "completed futures stopped listening")
            let last = signal.future
            callbacker.callAll(with: .end)
            #expect(last.result?.error as? FutureError == .aborted)
            _ = ended
            let failed = signal.future
            callbacker.callAll(with: .end(TestError()))
            #expect(failed.result?.error as? TestError == TestError())
        }
    }

    @Test("cancelling signal.future stops listening")
    func cancellingTheFutureStopsListening() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let future = Signal(callbacker: callbacker).future
            #expect(!callbacker.isEmpty)
            future.cancel()
            #expect(callbacker.isEmpty)
        }
    }

    @Test("valueSignal, resultSignal and valueThenEndSignal signal the future's outcome")
    func futureSignals() {
        onTestScheduler {
            let pending = PendingFuture<Int>()
            let valueLog = Recorder<String>()
            let resultLog = Recorder<String>()
            let thenEndLog = Recorder<String>()
            let bag = DisposeBag()
            bag += pending.future.valueSignal.onEvent { valueLog.append(describe($0)) }
            bag += pending.future.resultSignal.onValue { resultLog.append("\($0.value ?? -1)") }
            bag += pending.future.valueThenEndSignal.onEvent { thenEndLog.append(describe($0)) }
            pending.complete(with: .success(4))
            #expect(valueLog.elements == ["4"])
            #expect(resultLog.elements == ["4"])
            #expect(thenEndLog.elements == ["4", "end"])
            bag.dispose()

            let failing = Future<Int>(error: TestError())
            let failedLog = Recorder<String>()
            let failedThenEnd = Recorder<String>()
            bag += failing.valueSignal.onEvent { failedLog.append(describe($0)) }
            bag += failing.valueThenEndSignal.onEvent { failedThenEnd.append(describe($0)) }
            #expect(failedLog.elements == ["end(TestError(code: 1))"])
            #expect(failedThenEnd.elements == ["end(TestError(code: 1))"])
            bag.dispose()
        }
    }

    @Test("future.bindTo sets a ReadWriteSignal's value; hold(until:) waits for a true signal")
    func bindAndHold() {
        onTestScheduler {
            let target = ReadWriteSignal(0)
            Future(5).bindTo(target)
            #expect(target.value == 5)
            let optional = ReadWriteSignal<Int?>(nil)
            Future(6).bindTo(optional)
            #expect(optional.value == 6)

            let isReady = ReadWriteSignal(false)
            let held = Future(7).hold(until: isReady)
            #expect(held.result == nil)
            isReady.value = true
            #expect(held.result?.value == 7)
        }
    }

    @Test("mapLatestToFuture signals each future's value and cancels the previous future")
    func mapLatestToFuture() {
        onTestScheduler {
            let callbacker = Callbacker<Int>()
            let futures = Mutex<[Int: PendingFuture<String>]>([:])
            let mapped = Signal(callbacker: callbacker).mapLatestToFuture { value -> Future<String> in
                let pending = PendingFuture<String>()
                futures.withLock { $0[value] = pending }
                return pending.future
            }
            let log = Recorder<String>()
            let disposable = mapped.onEvent { log.append(describe($0)) }
            callbacker.callAll(with: 1)
            callbacker.callAll(with: 2)
            futures.withLock { $0 }[1]?.complete(with: .success("one"))
            futures.withLock { $0 }[2]?.complete(with: .success("two"))
            callbacker.callAll(with: 3)
            futures.withLock { $0 }[3]?.complete(with: .failure(TestError()))
            #expect(log.elements == ["two", "end(TestError(code: 1))"])
            disposable.dispose()
        }
    }

    @Test("FutureQueue.isEmptySignal and didBecomeEmpty follow the queue")
    func futureQueueSignals() {
        onTestScheduler {
            let queue = FutureQueue()
            #expect(queue.isEmptySignal.value)
            let changes = Recorder<Bool>()
            let emptied = Mutex(0)
            let bag = DisposeBag()
            bag += queue.isEmptySignal.atOnce().onValue { changes.append($0) }
            bag += queue.didBecomeEmpty.onValue { emptied.withLock { $0 += 1 } }
            let first = PendingFuture<Int>()
            let second = PendingFuture<Int>()
            let results = [queue.enqueue { first.future }, queue.enqueue { second.future }]
            #expect(!queue.isEmptySignal.value)
            first.complete(with: .success(1))
            second.complete(with: .success(2))
            #expect(changes.elements == [true, false, true])
            #expect(emptied.withLock { $0 } == 1)
            #expect(results.allSatisfy { $0.result != nil })
            bag.dispose()
        }
    }
}
