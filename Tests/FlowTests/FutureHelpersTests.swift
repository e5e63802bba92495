import Dispatch
import Flow
import Testing

/// Runs `body` as work of a fresh serial scheduler, so that callbacks registered with the default
/// scheduler inside run synchronously.
private func onHelperScheduler<T>(_ body: () -> T) -> T {
    Scheduler(label: "test.helpers").sync(execute: body)
}

/// Controllable futures made on demand by a transform, in the order it was called.
private final class Transforms: Sendable {
    let calls = Shared([Int]())
    private let operations = Shared([Int: Operation<Int>]())

    func start(_ element: Int) -> Future<Int> {
        let operation = Operation<Int>(on: .none)
        calls.mutate { $0.append(element) }
        operations.mutate { $0[element] = operation }
        return operation.future
    }

    func operation(_ element: Int) -> Operation<Int>? { operations.value[element] }

    func complete(_ element: Int, _ result: Result<Int>) { operations.value[element]?.complete(result) }

    /// Drops the operations' completion callbacks, which otherwise keep their futures alive.
    func releaseAll() {
        for operation in operations.value.values { operation.abandon() }
    }
}

@Suite("Future helpers", .checksLiveFutures)
struct FutureHelpersTests {
    // MARK: mapToFuture

    @Test("mapToFuture transforms the next element only once the previous future completed")
    func mapToFutureIsSequential() {
        onHelperScheduler {
            let transforms = Transforms()
            let mapped = [1, 2, 3].mapToFuture { transforms.start($0) }
            #expect(transforms.calls.value == [1])
            transforms.complete(1, .success(10))
            #expect(transforms.calls.value == [1, 2])
            transforms.complete(2, .success(20))
            #expect(transforms.calls.value == [1, 2, 3])
            #expect(!mapped.isCompleted)
            transforms.complete(3, .success(30))
            #expect(mapped.result?.value == [10, 20, 30])
        }
    }

    @Test("mapToFuture keeps the sequence's order whatever thread completes the futures")
    func mapToFutureKeepsOrderAcrossThreads() throws {
        let done = DispatchSemaphore(value: 0)
        let values = Shared<[Int]?>(nil)
        (0..<50).mapToFuture(on: Scheduler(label: "test.mapToFuture")) { element in
            Future(on: .concurrentBackground) { completion in
                completion(.success(element * 2))
                return NilDisposer()
            }
        }
        .onValue(on: .none) { result in
            values.mutate { $0 = result }
            done.signal()
        }
        expectSignal(done, "the mapped values")
        #expect(values.value == (0..<50).map { $0 * 2 })
    }

    @Test("mapToFuture fails with the first error and transforms nothing after it")
    func mapToFutureStopsAtTheFirstError() {
        onHelperScheduler {
            let transforms = Transforms()
            let mapped = [1, 2, 3].mapToFuture { transforms.start($0) }
            transforms.complete(1, .success(10))
            transforms.complete(2, .failure(TestError(code: 2)))
            #expect(mapped.result?.error as? TestError == TestError(code: 2))
            #expect(transforms.calls.value == [1, 2])

            let thrown = [1, 2].mapToFuture { element -> Future<Int> in
                if element == 1 { throw TestError(code: 9) }
                return transforms.start(element)
            }
            #expect(thrown.result?.error as? TestError == TestError(code: 9))
        }
    }

    @Test("mapToFutureResults collects every result in order, errors included, and never fails")
    func mapToFutureResultsCollectsEverything() {
        onHelperScheduler {
            let transforms = Transforms()
            let collected = [1, 2, 3, 4].mapToFutureResults { element -> Future<Int> in
                if element == 3 { throw TestError(code: 3) }
                return transforms.start(element)
            }
            transforms.complete(1, .success(10))
            transforms.complete(2, .failure(TestError(code: 2)))
            #expect(transforms.calls.value == [1, 2, 4])
            transforms.complete(4, .success(40))
            let results = collected.result?.value
            #expect(results?.count == 4)
            #expect(results?[0].value == 10)
            #expect(results?[1].error as? TestError == TestError(code: 2))
            #expect(results?[2].error as? TestError == TestError(code: 3))
            #expect(results?[3].value == 40)
        }
    }

    @Test("an empty sequence maps to an empty array")
    func emptySequence() {
        onHelperScheduler {
            #expect([Int]().mapToFuture { Future($0) }.result?.value == [])
            #expect([Int]().mapToFutureResults { Future($0) }.result?.value?.isEmpty == true)
        }
    }

    @Test("cancelling mapToFuture cancels the element in progress and transforms nothing more")
    func cancellingMapToFuture() {
        onHelperScheduler {
            let transforms = Transforms()
            let mapped = [1, 2, 3].mapToFuture { transforms.start($0) }
            transforms.complete(1, .success(10))
            mapped.cancel()
            #expect(mapped.result?.error as? FutureError == .aborted)
            #expect(transforms.operation(2)?.future.result?.error as? FutureError == .aborted)
            #expect(transforms.operation(2)?.disposals.value == 1)
            #expect(transforms.calls.value == [1, 2])
        }
    }

    @Test("a long sequence of synchronous futures and throws does not grow the stack")
    func longSynchronousSequences() {
        onHelperScheduler {
            let values = (0..<30_000).mapToFuture { Future($0) }
            #expect(values.result?.value?.count == 30_000)
            let failures = (0..<30_000).mapToFutureResults { _ -> Future<Int> in throw TestError() }
            #expect(failures.result?.value?.count == 30_000)
        }
    }

    @Test("mapToFuture frees its futures once done")
    func mapToFutureFreesItsFutures() {
        let count = LiveFutureCount()
        onHelperScheduler {
            count.track {
                let transforms = Transforms()
                [1, 2].mapToFuture { transforms.start($0) }.onValue(on: .none) { _ in }
                transforms.complete(1, .success(1))
                transforms.complete(2, .success(2))
                [1, 2].mapToFuture { transforms.start($0 + 10) }.cancel()
                transforms.releaseAll()
            }
        }
        #expect(count.value == 0)
    }

    // MARK: abort(forFutures:)

    @Test("abort(forFutures:) completes like the future when it completes first")
    func abortWhenTheFutureWins() {
        onHelperScheduler {
            let source = Operation<Int>(on: .none)
            let trigger = Operation<Void>(on: .none)
            let guarded = source.future.abort(forFutures: [trigger.future])
            source.succeed(5)
            #expect(guarded.result?.value == 5)
            #expect(trigger.future.result?.error as? FutureError == .aborted)  // cancelled, as in Flow
            trigger.succeed(())  // too late: no effect
            #expect(guarded.result?.value == 5)
            #expect(trigger.disposals.value == 1)
        }
    }

    @Test("abort(forFutures:) fails with the trigger's error and cancels the future and the other triggers when a trigger completes first")
    func abortWhenATriggerWins() {
        onHelperScheduler {
            let source = Operation<Int>(on: .none)
            let quiet = Operation<Void>(on: .none)
            let trigger = Operation<Void>(on: .none)
            let guarded = source.future.abort(forFutures: [quiet.future, trigger.future])
            trigger.fail(TestError())  // an error counts as completing, and is the abort's error
            #expect(guarded.result?.error is TestError)
            #expect(source.future.result?.error as? FutureError == .aborted)
            #expect(source.disposals.value == 1)
            #expect(quiet.future.result?.error as? FutureError == .aborted)  // cancelled, as in Flow
            #expect(quiet.disposals.value == 1)
        }
    }

    @Test("abort(forFutures:) with an already completed future aborts at once")
    func abortWithACompletedTrigger() {
        onHelperScheduler {
            let source = Operation<Int>(on: .none)
            let guarded = source.future.abort(forFutures: [Future()])
            #expect(guarded.result?.error as? FutureError == .aborted)
            #expect(source.future.result?.error as? FutureError == .aborted)
        }
    }

    @Test("cancelling the future abort(forFutures:) returned cancels the guarded future and the triggers")
    func cancellingAbort() {
        onHelperScheduler {
            let source = Operation<Int>(on: .none)
            let trigger = Operation<Void>(on: .none)
            let guarded = source.future.abort(forFutures: [trigger.future])
            guarded.cancel()
            #expect(source.future.result?.error as? FutureError == .aborted)
            #expect(trigger.future.result?.error as? FutureError == .aborted)
        }
    }

    @Test("abort(forFutures:) frees its futures once everything completed")
    func abortFreesItsFutures() {
        let count = LiveFutureCount()
        onHelperScheduler {
            count.track {
                let source = Operation<Int>(on: .none)
                let trigger = Operation<Void>(on: .none)
                source.future.abort(forFutures: [trigger.future]).onValue(on: .none) { _ in }
                trigger.succeed(())
                // The test's `Operation` keeps its completion callback (and so its future) until told.
                source.abandon()
                trigger.abandon()
            }
        }
        #expect(count.value == 0)
    }

    // MARK: SingleTaskPerformer

    @Test("SingleTaskPerformer shares the running task instead of starting another")
    func performerShares() {
        onHelperScheduler {
            let performer = SingleTaskPerformer<Int>()
            let starts = Shared(0)
            let task = Operation<Int>(on: .none)
            #expect(!performer.isPerforming)
            let first = performer.performSingleTask {
                starts.mutate { $0 += 1 }
                return task.future
            }
            let second = performer.performSingleTask { () -> Future<Int> in
                starts.mutate { $0 += 1 }
                return Future(-1)
            }
            #expect(starts.value == 1)
            #expect(performer.isPerforming)

            let performingInCallback = Shared<Bool?>(nil)
            first.onValue(on: .none) { _ in performingInCallback.mutate { $0 = performer.isPerforming } }
            task.succeed(7)
            #expect(first.result?.value == 7)
            #expect(second.result?.value == 7)
            #expect(performingInCallback.value == false)
            #expect(!performer.isPerforming)

            let third = performer.performSingleTask { Future(8) }  // a new task once the last one ended
            #expect(third.result?.value == 8)
            #expect(!performer.isPerforming)
        }
    }

    @Test("SingleTaskPerformer: one caller cancelling leaves the others; all cancelling cancels the task")
    func performerCancellation() {
        onHelperScheduler {
            let performer = SingleTaskPerformer<Int>()
            let task = Operation<Int>(on: .none)
            let first = performer.performSingleTask { task.future }
            let second = performer.performSingleTask { Future(0) }
            first.cancel()
            #expect(first.result?.error as? FutureError == .aborted)
            #expect(!task.future.isCompleted)
            #expect(performer.isPerforming)
            second.cancel()
            #expect(task.future.result?.error as? FutureError == .aborted)
            #expect(task.disposals.value == 1)
            #expect(!performer.isPerforming)
        }
    }

    @Test("SingleTaskPerformer frees its futures once the task is done")
    func performerFreesItsFutures() {
        let count = LiveFutureCount()
        onHelperScheduler {
            count.track {
                let performer = SingleTaskPerformer<Int>()
                let task = Operation<Int>(on: .none)
                performer.performSingleTask { task.future }.onValue(on: .none) { _ in }
                performer.performSingleTask { task.future }.onValue(on: .none) { _ in }
                task.succeed(1)
                task.abandon()
            }
        }
        #expect(count.value == 0)
    }
}
