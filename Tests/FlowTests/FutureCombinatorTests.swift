import Dispatch
import Flow
import FlowTesting
import Testing

@Suite("Future combinators: join and select", .checksLiveFutures)
struct FutureCombinatorTests {
    @Test("join waits for every future and keeps input order; [] gives []")
    func joinKeepsOrder() {
        let first = Operation<Int>(on: .none)
        let second = Operation<String>(on: .none)
        let both = join(first.future, second.future)
        second.succeed("b")
        #expect(!both.isCompleted)
        first.succeed(1)
        #expect(both.result?.value.map { "\($0.0)\($0.1)" } == "1b")

        let operations = (0..<5).map { _ in Operation<Int>(on: .none) }
        let all = join(operations.map(\.future))
        for (index, operation) in operations.enumerated().reversed() { operation.succeed(index * 10) }
        #expect(all.result?.value == [0, 10, 20, 30, 40])
        #expect(join([Future<Int>]()).result?.value == [])
        let three = join(Future(1), Future("two"), Future(3.0))
        #expect(three.result?.value.map { "\($0.0) \($0.1) \($0.2)" } == "1 two 3.0")
        #expect(Future(1).join(with: Future(2)).result?.value.map { $0.0 + $0.1 } == 3)
    }

    @Test("join fails fast with the first error and cancels the rest")
    func joinFailsFast() {
        let slow = Operation<Int>(on: .none)
        let failing = Operation<Int>(on: .none)
        let joined = join([slow.future, failing.future])
        failing.fail(TestError(code: 7))
        #expect(joined.result?.error as? TestError == TestError(code: 7))
        #expect(slow.future.result?.error as? FutureError == .aborted)
        #expect(slow.disposals.value == 1)

        let kept = Operation<Int>(on: .none)
        let notCancelling = join([kept.future, Future(error: TestError())], cancelNonCompleted: false)
        #expect(notCancelling.result?.error is TestError)
        #expect(!kept.future.isCompleted)
        kept.succeed(0)  // an operation still in flight rightly keeps its future alive
    }

    @Test("join over an array: an input that failed before joining cancels the inputs before and after it")
    func joinWithAFailedInput() {
        let before = Operation<Int>(on: .none)
        let after = Operation<Int>(on: .none)
        let joined = join([before.future, Future(error: TestError(code: 3)), after.future])
        #expect(joined.result?.error as? TestError == TestError(code: 3))
        #expect(before.future.result?.error as? FutureError == .aborted)
        #expect(after.future.result?.error as? FutureError == .aborted)
        #expect(before.disposals.value == 1)
        #expect(after.disposals.value == 1)
    }

    @Test("join over an array: cancelling the joined future cancels every input; repeating it runs each input again")
    func joinCancelsAndRepeats() {
        let inputs = (0..<3).map { _ in Operation<Int>(on: .none) }
        let joined = join(inputs.map(\.future))
        inputs[1].succeed(1)
        joined.cancel()
        #expect(joined.result?.error as? FutureError == .aborted)
        #expect(inputs[0].future.result?.error as? FutureError == .aborted)
        #expect(inputs[2].future.result?.error as? FutureError == .aborted)

        let runs = Shared(0)
        let attempts = Shared(0)
        let sources = (0..<3).map { index in
            Future<Int>(on: .none) { completion in
                runs.mutate { $0 += 1 }
                completion(index == 2 && attempts.value == 0 ? .failure(TestError()) : .success(index))
                return NilDisposer()
            }
        }
        let clock = VirtualTimeScheduler()
        let repeated = clock.scheduler.sync {
            join(sources).onErrorRepeat(maxRepetitions: 1) { _ in
                attempts.mutate { $0 += 1 }
                return true
            }
        }
        clock.runUntilIdle()
        #expect(repeated.result?.value == [0, 1, 2])
        #expect(runs.value == 6)
    }

    @Test("select completes with the first result as Either and cancels the loser unless asked not to")
    func selectCancelsTheLoser() {
        let left = Operation<Int>(on: .none)
        let right = Operation<String>(on: .none)
        let selected = select(left.future, or: right.future)
        right.succeed("right wins")
        #expect(selected.result?.value == .right("right wins"))
        #expect(left.future.result?.error as? FutureError == .aborted)

        let survivor = Operation<Int>(on: .none)
        let kept = select(survivor.future, or: Future("now"), cancelNonCompleted: false)
        #expect(kept.result?.value == Either<Int, String>.right("now"))
        #expect(!survivor.future.isCompleted)
        survivor.succeed(0)

        let alreadyDone = Operation<Int>(on: .none)
        let firstOfMany = select(between: [Future(1), alreadyDone.future])
        #expect(firstOfMany.result?.value == 1)
        #expect(alreadyDone.future.result?.error as? FutureError == .aborted)
        #expect(Future(1).select(between: Future("x")).result?.value?.left == 1)
    }

    @Test("cancelling a join cancels every input nobody else observes")
    func cancellingAJoin() {
        let first = Operation<Int>(on: .none)
        let second = Operation<Int>(on: .none)
        let joined = join(first.future, second.future)
        joined.cancel()
        #expect(first.future.result?.error as? FutureError == .aborted)
        #expect(second.future.result?.error as? FutureError == .aborted)
    }

    @Test("Either exposes its sides and is Equatable and Hashable")
    func either() {
        let left: Either<Int, String> = .left(1)
        #expect(left.left == 1 && left.right == nil)
        #expect(Set([left, .left(1), .right("a")]).count == 2)
    }
}

@Suite("Future repetition", .checksLiveFutures)
struct FutureRepeatTests {
    /// Runs `body` on a virtual-time scheduler (repetition decides on the scheduler current where it
    /// was requested), then runs that scheduler until it has nothing left to do.
    func onVirtualScheduler<T>(_ body: () -> T) -> T {
        let clock = VirtualTimeScheduler()
        let value = clock.scheduler.sync(execute: body)
        clock.runUntilIdle()
        return value
    }

    @Test("onErrorRepeat(delayBetweenRepetitions:maxRepetitions: 3) runs 4 times, waiting between runs on the scheduler's clock")
    func repeatRunsMaxPlusOneTimes() {
        let clock = VirtualTimeScheduler()
        let attempts = Shared([Double]())
        let repeated = clock.scheduler.sync {
            Future<Int>(on: .none) { completion in
                attempts.mutate { $0.append(Double(clock.uptimeNanoseconds) / 1e9) }
                completion(.failure(TestError()))
                return NilDisposer()
            }.onErrorRepeat(delayBetweenRepetitions: 2, maxRepetitions: 3)
        }
        clock.advance(by: 60.0)
        #expect(attempts.value == [0, 2, 4, 6])
        #expect(repeated.result?.error is TestError)
    }

    @Test("a repetition re-runs every upstream stage")
    func everyStageReRuns() {
        let stages = Shared([String]())
        let failuresLeft = Shared(2)
        let repeated = onVirtualScheduler { Future<Int>(on: .none) { completion in
            stages.mutate { $0.append("operation") }
            completion(.success(1))
            return NilDisposer()
        }
        .map(on: .none) { value -> Int in stages.mutate { $0.append("map") }; return value + 1 }
        .flatMap(on: .none) { value -> Future<Int> in stages.mutate { $0.append("flatMap") }; return Future(value + 1) }
        .onValue(on: .none) { _ in stages.mutate { $0.append("onValue") } }
        .map(on: .none) { value -> Int in
            let fail = failuresLeft.mutate { left -> Bool in left -= 1; return left >= 0 }
            if fail { throw TestError() }
            return value
        }
        .onErrorRepeat(maxRepetitions: 5) }
        #expect(repeated.result?.value == 3)
        #expect(stages.value == Array(repeating: ["operation", "map", "flatMap", "onValue"], count: 3).flatMap { $0 })
    }

    @Test("a false predicate completes with the last result; an asynchronous predicate decides later")
    func predicates() {
        let runs = Shared(0)
        let failing = Future<Int>(on: .none) { completion in
            runs.mutate { $0 += 1 }
            completion(.failure(TestError(code: runs.value)))
            return NilDisposer()
        }
        let stopped = onVirtualScheduler { failing.onErrorRepeat { error in (error as? TestError)?.code ?? 0 < 2 } }
        #expect(stopped.result?.error as? TestError == TestError(code: 2))

        let answer = Operation<Bool>(on: .none)
        let asked = onVirtualScheduler { Future<Int>(error: TestError()).onErrorRepeat { _ in answer.future } }
        #expect(!asked.isCompleted)
        answer.succeed(false)
        #expect(asked.result?.error is TestError)
    }

    @Test("onResultRepeat repeats on values too, and repeatAndCollect collects repeatCount + 1 values")
    func resultRepeatAndCollect() {
        let counter = Shared(0)
        @Sendable func counting() -> Future<Int> {
            Future<Int>(on: .none) { completion in
                completion(.success(counter.mutate { $0 += 1; return $0 }))
                return NilDisposer()
            }
        }
        let untilFive = onVirtualScheduler { counting().onResultRepeat { ($0.value ?? 0) < 5 } }
        #expect(untilFive.result?.value == 5)
        counter.mutate { $0 = 0 }
        let collected = onVirtualScheduler { counting().repeatAndCollect(repeatCount: 3) }
        #expect(collected.result?.value == [1, 2, 3, 4])
    }

    @Test("100,000 immediate repetitions complete without overflowing the stack")
    func manyImmediateRepetitions() {
        let runs = Shared(0)
        let repeated = onVirtualScheduler {
            Future<Int>(on: .none) { completion in
                runs.mutate { $0 += 1 }
                completion(.failure(TestError()))
                return NilDisposer()
            }.onErrorRepeat(maxRepetitions: 100_000)
        }
        #expect(runs.value == 100_001)
        #expect(repeated.result?.error is TestError)
    }

    @Test("a Mover restarts a future created outside the operation on each repetition")
    func moverRestartsOutsideFutures() {
        let logins = Shared(0)
        let login = Future<String>(on: .none) { completion in
            logins.mutate { $0 += 1 }
            completion(.success("token"))
            return NilDisposer()
        }
        let attempts = Shared(0)
        let session = onVirtualScheduler {
            Future<String>(on: .none) { completion, mover in
                let attempt = attempts.mutate { $0 += 1; return $0 }
                return mover.moveInside(login).onResult(on: .none) { result in
                    completion(attempt < 3 ? .failure(TestError()) : result)
                }.disposable
            }.onErrorRepeat()
        }
        #expect(session.result?.value == "token")
        #expect(logins.value == 3)
    }

    @Test("cancelling a repeating future waiting for its delay stops the repetition")
    func cancelDuringDelay() {
        let clock = VirtualTimeScheduler()
        let runs = Shared(0)
        let repeated = clock.scheduler.sync {
            Future<Int>(on: .none) { completion in
                runs.mutate { $0 += 1 }
                completion(.failure(TestError()))
                return NilDisposer()
            }.onErrorRepeat(delayBetweenRepetitions: 1)
        }
        repeated.cancel()
        clock.advance(by: 10.0)
        #expect(runs.value == 1)
        #expect(repeated.result?.error as? FutureError == .aborted)
    }
}

@Suite("Future timing helpers, on virtual time", .checksLiveFutures)
struct FutureTimeTests {
    @Test("delay(by:) completes after the delay; replace(with:after:) times out and cancels the original")
    func delayAndReplace() {
        let clock = VirtualTimeScheduler()
        let slow = Operation<Int>(on: .none)
        let (delayed, replaced, failed) = clock.scheduler.sync {
            (Future(1).delay(by: 5), slow.future.replace(with: -1, after: 3), Future<Int>(.forever).fail(with: TestError(), after: 4))
        }
        clock.advance(by: 2.0)
        #expect(!delayed.isCompleted && !replaced.isCompleted)
        clock.advance(by: 1.0)
        #expect(replaced.result?.value == -1)
        #expect(slow.future.result?.error as? FutureError == .aborted)
        clock.advance(by: 1.0)
        #expect(failed.result?.error is TestError)
        #expect(!delayed.isCompleted)
        clock.advance(by: 1.0)
        #expect(delayed.result?.value == 1)
        #expect(Future(2).delay(by: nil).result?.value == 2)
    }

    @Test("a future completing before its timeout keeps its own result")
    func completesBeforeTimeout() {
        let clock = VirtualTimeScheduler()
        let operation = Operation<Int>(on: .none)
        let guarded = clock.scheduler.sync { operation.future.succeed(with: 0, after: 10) }
        operation.succeed(42)
        clock.advance(by: 20.0)
        #expect(guarded.result?.value == 42)
    }

    @Test("performWhile runs its work after the delay while pending, and disposes it on completion")
    func performWhile() {
        let clock = VirtualTimeScheduler()
        let operation = Operation<Int>(on: .none)
        let events = Shared([String]())
        _ = clock.scheduler.sync {
            operation.future.performWhile(delayBy: 1) {
                events.mutate { $0.append("started") }
                return Disposer { events.mutate { $0.append("stopped") } }
            }
        }
        clock.advance(by: 2.0)
        #expect(events.value == ["started"])
        operation.succeed(1)
        clock.runUntilIdle()
        #expect(events.value == ["started", "stopped"])
    }
}

@Suite("Future stack safety and threads", .checksLiveFutures)
struct FutureStressTests {
    @Test("a 1,000,000-link map chain builds, completes and is released without overflowing the stack")
    func millionLinkMapChain() {
        let count = LiveFutureCount()
        count.track {
            let root = Operation<Int>(on: .none)
            var leaf = root.future
            for _ in 0..<1_000_000 { leaf = leaf.map(on: .none) { $0 + 1 } }
            root.succeed(0)
            #expect(leaf.result?.value == 1_000_000)
        }
        #expect(count.value == 0)
    }

    @Test("a 1,000,000-deep recursive flatMap on completed futures completes without overflowing the stack")
    func millionDeepRecursiveFlatMap() {
        @Sendable func step(_ value: Int) -> Future<Int> {
            value >= 1_000_000 ? Future(value) : Future(value + 1).flatMap(on: .none, step)
        }
        #expect(step(0).result?.value == 1_000_000)
    }

    @Test("completion races from 8 threads: exactly one completion wins and every observer runs once")
    func completionRaces() {
        for _ in 0..<200 {
            let operation = Operation<Int>(on: .none)
            let observed = Shared(0)
            for _ in 0..<4 { operation.future.onValue(on: .none) { _ in observed.mutate { $0 += 1 } } }
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                if index % 2 == 0 {
                    operation.succeed(index)
                } else {
                    operation.future.onValue(on: .none) { _ in observed.mutate { $0 += 1 } }
                }
            }
            #expect(observed.value == 8)
            #expect(operation.future.result?.value.map { $0 % 2 == 0 } == true)
        }
    }

    @Test("callbacks hop to the loop they asked for, from completions on other threads")
    func hopsToTheLoop() {
        withLoopOnOwnThread { loop in
            let onLoop = Shared(0)
            let done = DispatchSemaphore(value: 0)
            let total = 1000
            for index in 0..<total {
                let future = Future<Int>(on: .concurrentBackground) { completion in
                    completion(.success(index))
                    return NilDisposer()
                }
                future.map(on: loop.scheduler) { $0 }.onValue(on: loop.scheduler) { value in
                    if loop.isInLoopContext { onLoop.mutate { $0 += 1 } }
                    if onLoop.value == total { done.signal() }
                }
            }
            expectSignal(done, "every callback on the loop")
            #expect(onLoop.value == total)
        }
    }
}
