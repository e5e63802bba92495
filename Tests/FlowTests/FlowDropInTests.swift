import Dispatch
import Flow
import FlowTesting
import Testing

/// The behaviours Flow code relies on, each as Flow 1.12 documents or implements it.
@Suite("Flow drop-in behaviour", .checksLiveFutures)
struct FlowDropInTests {
    // MARK: Spellings

    @Test("completion(.success) completes a Future<Void>, and Result has Flow's getValue() and init(_:)")
    func voidSuccessSpelling() throws {
        let saved = Future<Void>(on: .none) { completion in
            completion(.success)
            return NilDisposer()
        }
        #expect(saved.result?.value != nil)
        let parsed = Result<Int> { 4 }
        #expect(try parsed.getValue() == 4)
        let failing: () throws -> Int = { throw TestError() }
        #expect(Result(failing).error is TestError)
    }

    @Test("Mutex: protect returns the block's value, and lock/unlock guard a counter shared by threads")
    func mutexGuardsACounter() {
        let mutex = Flow.Mutex()
        let counter = UnsafeCounter()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<1_000 {
                mutex.lock()
                counter.value += 1
                mutex.unlock()
            }
        }
        #expect(mutex.protect { counter.value } == 8_000)
    }

    @Test("onErrorRepeat() and onResultRepeat(maxRepetitions:) with Flow's defaulted predicate repeat every time")
    func defaultedRepeatPredicates() {
        let clock = VirtualTimeScheduler()
        let runs = Shared(0)
        let failing = clock.scheduler.sync {
            Future<Int>(on: .none) { completion in
                runs.mutate { $0 += 1 }
                completion(.failure(TestError()))
                return NilDisposer()
            }.onErrorRepeat(maxRepetitions: 2)
        }
        clock.runUntilIdle()
        #expect(runs.value == 3)
        #expect(failing.result?.error is TestError)

        let polls = Shared(0)
        let polled = clock.scheduler.sync {
            Future<Int>(on: .none) { completion in
                completion(.success(polls.mutate { $0 += 1; return $0 }))
                return NilDisposer()
            }.onResultRepeat(on: clock.scheduler, delayBetweenRepetitions: 1, maxRepetitions: 3)
        }
        clock.runUntilIdle()
        #expect(polled.result?.value == 4)
    }

    @Test("replace(with: Result, after:) replaces a never-completing future with the result, failure included")
    func replaceWithAResult() {
        let clock = VirtualTimeScheduler()
        let replaced = expectDebugDiagnostic(containing: "released its completion callback without calling it") {
            clock.scheduler.sync {
                Future<Int>(on: .none) { _ in NilDisposer() }.replace(with: .failure(TestError(code: 7)), after: 5)
            }
        }
        clock.advance(by: 4.0)
        #expect(replaced.result == nil)
        clock.advance(by: 2.0)
        #expect((replaced.result?.error as? TestError)?.code == 7)
    }

    // MARK: Never-completing futures

    @Test("a future whose operation keeps no completion callback stays pending: select picks the other, replace replaces")
    func operationWithoutCallbackNeverCompletes() {
        let clock = VirtualTimeScheduler()
        let (never, selected) = expectDebugDiagnostic(2, containing: "released its completion callback without calling it") {
            (Future<Int>(on: .none) { _ in NilDisposer() }, select(Future(1), or: Future<Int>(on: .none) { _ in NilDisposer() }))
        }
        #expect(never.result == nil)
        #expect(selected.result?.value?.left == 1)
        let replaced = clock.scheduler.sync { never.replace(with: 9, after: 1) }
        clock.advance(by: 1.0)
        #expect(replaced.result?.value == 9)
        #expect(never.result?.error as? FutureError == .aborted)  // replaced: cancelled, nobody else observed it
    }

    // MARK: Repetition

    @Test("repeating a future FutureQueue.enqueue returned enqueues the operation again")
    func enqueuedFutureRepeatsTheOperation() {
        let clock = VirtualTimeScheduler()
        let runs = Shared(0)
        let collected = clock.scheduler.sync { () -> Future<[Int]> in
            let queue = FutureQueue(executeOn: clock.scheduler)
            return queue.enqueue { () -> Int in runs.mutate { $0 += 1; return $0 } }
                .repeatAndCollect(repeatCount: 2)
        }
        clock.runUntilIdle()
        #expect(collected.result?.value == [1, 2, 3])
        #expect(runs.value == 3)

        let attempts = Shared(0)
        let retried = clock.scheduler.sync { () -> Future<Int> in
            let queue = FutureQueue(executeOn: clock.scheduler)
            return queue.enqueue { () throws -> Int in
                let attempt = attempts.mutate { $0 += 1; return $0 }
                if attempt < 3 { throw TestError() }
                return attempt
            }.onErrorRepeat(delayBetweenRepetitions: 1)
        }
        clock.runUntilIdle()
        #expect(retried.result?.value == 3)
    }

    @Test("a future abort(forFutures:) returned can be repeated: the repetition runs the original again")
    func abortedFutureRepeatsTheOriginal() {
        let clock = VirtualTimeScheduler()
        let runs = Shared(0)
        let repeated = clock.scheduler.sync {
            Future<Int>(on: .none) { completion in
                let run = runs.mutate { $0 += 1; return $0 }
                completion(run < 3 ? .failure(TestError()) : .success(run))
                return NilDisposer()
            }
            .abort(forFutures: [Future(.forever)])
            .onErrorRepeat(maxRepetitions: 5)
        }
        clock.runUntilIdle()
        #expect(repeated.result?.value == 3)
        #expect(runs.value == 3)
    }

    @Test("when the future abort(forFutures:) watches wins, its abort triggers are cancelled")
    func abortCancelsItsTriggersWhenTheFutureWins() {
        let source = Operation<Int>(on: .none)
        let trigger = Operation<Void>(on: .none)
        let guarded = source.future.abort(forFutures: [trigger.future])
        source.succeed(5)
        #expect(guarded.result?.value == 5)
        #expect(trigger.future.result?.error as? FutureError == .aborted)
        #expect(trigger.disposals.value == 1)
    }

    @Test("a trigger of abort(forFutures:) that fails aborts with its error; one that succeeds with FutureError.aborted")
    func abortTakesTheTriggersError() {
        let failing = Operation<Void>(on: .none)
        let first = Operation<Int>(on: .none)
        let abortedByError = first.future.abort(forFutures: [failing.future])
        failing.fail(TestError(code: 3))
        #expect((abortedByError.result?.error as? TestError)?.code == 3)
        #expect(first.future.result?.error as? FutureError == .aborted)

        let second = Operation<Int>(on: .none)
        let abortedByValue = second.future.abort(forFutures: [Future()])
        #expect(abortedByValue.result?.error as? FutureError == .aborted)
    }

    // MARK: ignoreCanceling

    @Test("cancelling what follows ignoreCanceling() ends it with FutureError.aborted; the original runs to completion")
    func ignoreCancelingShieldsTheOriginal() {
        let original = Operation<Int>(on: .none)
        let delivered = Shared([Int]())
        let shielded = original.future.ignoreCanceling()
        let following = shielded.onValue(on: .none) { value in delivered.mutate { $0.append(value) } }
        following.cancel()
        #expect(following.result?.error as? FutureError == .aborted)
        #expect(shielded.result?.error as? FutureError == .aborted)
        #expect(original.future.result == nil)
        #expect(original.disposals.value == 0)
        original.succeed(8)
        #expect(original.future.result?.value == 8)
        #expect(delivered.value.isEmpty)
    }

    @Test("ignoreCanceling() passes the original's result through, a failure included")
    func ignoreCancelingPassesResults() {
        let original = Operation<Int>(on: .none)
        let shielded = original.future.ignoreCanceling()
        original.fail(TestError(code: 4))
        #expect((shielded.result?.error as? TestError)?.code == 4)
    }

    // MARK: performWhile

    @Test("performWhile on an already completed future performs its work and disposes it at once")
    func performWhileOnACompletedFuture() {
        let events = Shared([String]())
        let performed = Future(1).performWhile(on: .none) {
            events.mutate { $0.append("started") }
            return Disposer { events.mutate { $0.append("stopped") } }
        }
        #expect(performed.result?.value == 1)
        #expect(events.value == ["started", "stopped"])
    }

    @Test("performWhile with a delay skips the work when the future completes first")
    func performWhileDelayedSkipsWorkOnEarlyCompletion() {
        let clock = VirtualTimeScheduler()
        let operation = Operation<Int>(on: .none)
        let started = Shared(0)
        _ = clock.scheduler.sync {
            operation.future.performWhile(delayBy: 2) {
                started.mutate { $0 += 1 }
                return NilDisposer()
            }
        }
        clock.advance(by: 1.0)
        operation.succeed(1)
        clock.runUntilIdle()
        #expect(started.value == 0)
    }

    // MARK: Cancellation callbacks

    @Test("cancelling a chain runs its onCancel callbacks from the first future to the last, as Flow disposes it")
    func onCancelOrderAlongAChain() {
        let operation = Operation<Int>(on: .none)
        let order = Shared([String]())
        let last = operation.future
            .onCancel(on: .none) { order.mutate { $0.append("first") } }
            .map(on: .none) { $0 + 1 }
            .onCancel(on: .none) { order.mutate { $0.append("second") } }
            .always(on: .none) { order.mutate { $0.append("always") } }
        last.cancel()
        #expect(order.value == ["first", "second", "always"])
        #expect(operation.disposals.value == 1)
    }

    @Test("onCancel does not run for a failure with FutureError.aborted that arrives as a result; always runs once")
    func onCancelIgnoresAnAbortedResult() {
        let operation = Operation<Int>(on: .none)
        let cancelled = Shared(0)
        let ended = Shared(0)
        operation.future
            .onCancel(on: .none) { cancelled.mutate { $0 += 1 } }
            .always(on: .none) { ended.mutate { $0 += 1 } }
        operation.fail(FutureError.aborted)
        #expect(cancelled.value == 0)
        #expect(ended.value == 1)
    }

    @Test("onErrorOrCancel gets the error on a failure and nil on a cancellation")
    func onErrorOrCancelArguments() {
        let failing = Operation<Int>(on: .none)
        let seen = Shared([String]())
        failing.future.onErrorOrCancel(on: .none) { error in seen.mutate { $0.append(error == nil ? "nil" : "error") } }
        failing.fail(TestError())
        let cancelled = Operation<Int>(on: .none)
        cancelled.future.onErrorOrCancel(on: .none) { error in seen.mutate { $0.append(error == nil ? "nil" : "error") } }
            .cancel()
        #expect(seen.value == ["error", "nil"])
    }

    // MARK: Smaller spellings

    @Test("delay(by: nil) gives a new future, delay(by: 0) waits for the timer's next turn")
    func delaySpellings() {
        let clock = VirtualTimeScheduler()
        let operation = Operation<Int>(on: .none)
        let undelayed = operation.future.delay(by: nil)
        #expect(undelayed !== operation.future)
        let zero = clock.scheduler.sync { Future(1).delay(by: 0) }
        #expect(zero.result == nil)
        clock.advance(by: 0.0)
        #expect(zero.result?.value == 1)
        undelayed.cancel()
    }

    @Test("onValuePassItThrough, onErrorPassItThrough and onResultPassItThrough wait for their future and keep the result")
    func passItThrough() {
        let side = Operation<String>(on: .none)
        let passed = Future(3).onValuePassItThrough(on: .none) { _ in side.future }
        #expect(passed.result == nil)
        side.succeed("logged")
        #expect(passed.result?.value == 3)
        let failed = Future<Int>(error: TestError(code: 2)).onErrorPassItThrough(on: .none) { _ in Future(()) }
        #expect((failed.result?.error as? TestError)?.code == 2)
        let sideFailure = Future(4).onResultPassItThrough(on: .none) { _ in Future<Void>(error: TestError(code: 9)) }
        #expect((sideFailure.result?.error as? TestError)?.code == 9)
    }

    @Test("onErrorRepeat with a delay of zero still waits for the timer's next turn; nil re-runs at once")
    func zeroRepetitionDelayWaitsATurn() {
        let clock = VirtualTimeScheduler()
        let runs = Shared(0)
        let operation = { @Sendable () -> Future<Int> in
            Future<Int>(on: .none) { completion in
                runs.mutate { $0 += 1 }
                completion(.failure(TestError()))
                return NilDisposer()
            }
        }
        let zero = clock.scheduler.sync { operation().onErrorRepeat(delayBetweenRepetitions: 0, maxRepetitions: 1) }
        #expect(runs.value == 1)
        clock.advance(by: 0.0)
        #expect(runs.value == 2)
        #expect(zero.result?.error is TestError)
        let none = clock.scheduler.sync { operation().onErrorRepeat(maxRepetitions: 1) }
        #expect(runs.value == 4)
        #expect(none.result?.error is TestError)
    }

    @Test("Disposable.dispose(after:) disposes once the time is up")
    func disposeAfter() {
        let clock = VirtualTimeScheduler()
        let disposed = Shared(0)
        let done = clock.scheduler.sync { Disposer { disposed.mutate { $0 += 1 } }.dispose(after: 3) }
        clock.advance(by: 2.0)
        #expect(disposed.value == 0)
        clock.advance(by: 2.0)
        #expect(disposed.value == 1)
        #expect(done.isCompleted)
    }

    @Test("recursive gives a function that calls itself, and nil once released")
    func recursiveFunctions() {
        let factorial: (Int) -> Int = recursive { n, factorial in n > 1 ? n * (factorial(n - 1) ?? 0) : 1 }
        #expect(factorial(5) == 120)
        var escaped: ((Int) -> Int?)?
        do {
            let capture: (Int) -> Int = recursive { n, recurse in
                escaped = recurse
                return n
            }
            _ = capture(1)
        }
        #expect(escaped?(2) == nil)
    }

    @Test("Either: any, map(transform:) and the setters")
    func eitherHelpers() {
        var either = Either<Int, Int>.left(2)
        #expect(either.map { $0 * 10 }.any == 20)
        either.right = 5
        #expect(either == .right(5))
    }

    @Test("coalesceToNextRunLoop runs the action once for several calls before the next turn")
    func coalesceToNextRunLoop() {
        let clock = VirtualTimeScheduler()
        let performer = SingleTaskPerformer<Void>()
        let runs = Shared(0)
        clock.scheduler.sync {
            for _ in 0..<3 { performer.coalesceToNextRunLoop { runs.mutate { $0 += 1 } } }
        }
        clock.runUntilIdle()
        #expect(runs.value == 1)
        #expect(!performer.isPerforming)
    }
}

/// A counter guarded by the test's own locking (the Mutex under test).
private final class UnsafeCounter: @unchecked Sendable {
    // @unchecked Sendable: `value` is guarded by the `Flow.Mutex` of the test that uses it.
    var value = 0
}

@Suite("Flow drop-in: FutureQueue batches", .checksLiveFutures)
struct FlowDropInQueueTests {
    @Test("enqueueBatch with an operation returning a plain value completes with it once the batch is empty")
    func plainValueBatch() {
        let clock = VirtualTimeScheduler()
        let order = Shared([String]())
        let batch = clock.scheduler.sync { () -> Future<Int> in
            let queue = FutureQueue(executeOn: clock.scheduler)
            return queue.enqueueBatch { batch -> Int in
                batch.enqueue { Future(1).delay(by: 1).onValue(on: .none) { _ in order.mutate { $0.append("inner") } } }
                order.mutate { $0.append("operation") }
                return 7
            }
        }
        clock.runUntilIdle()
        #expect(batch.result?.value == 7)
        #expect(order.value == ["operation", "inner"])
    }
}
