import Flow
import Testing

/// A future keeps its first continuation inline and moves to a list with the second; these tests
/// check that the list behaves like the inline slot: order, removal by cancellation, back to one,
/// abandonment and release.
@Suite("Future continuation storage", .checksLiveFutures)
struct FutureContinuationStorageTests {
    @Test("continuations are told in the order they were added, one or many")
    func order() {
        for count in [1, 2, 3, 10] {
            let operation = Operation<Int>(on: .none)
            let told = Shared<[Int]>([])
            let continuations = (0..<count).map { index in
                operation.future.onValue(on: .none) { _ in told.mutate { $0.append(index) } }
            }
            operation.succeed(5)
            #expect(told.value == Array(0..<count))
            #expect(continuations.allSatisfy { $0.result?.value == 5 })
        }
    }

    @Test("cancelling some of several continuations keeps the others, in order; the last cancels the future")
    func cancelSome() {
        let operation = Operation<Int>(on: .none)
        let told = Shared<[Int]>([])
        let continuations = (0..<4).map { index in
            operation.future.onValue(on: .none) { _ in told.mutate { $0.append(index) } }
        }
        continuations[0].cancel()
        continuations[2].cancel()
        #expect(operation.future.result == nil)
        #expect(operation.disposals.value == 0)

        // Back to one continuation, then a new one after it.
        continuations[3].cancel()
        let added = operation.future.onValue(on: .none) { _ in told.mutate { $0.append(4) } }
        operation.succeed(1)
        #expect(told.value == [1, 4])
        #expect(added.result?.value == 1)
        #expect(continuations[2].result?.error as? FutureError == .aborted)

        let cancelledAll = Operation<Int>(on: .none)
        let observers = (0..<3).map { _ in cancelledAll.future.map(on: .none) { $0 } }
        for observer in observers.reversed() { observer.cancel() }
        #expect(cancelledAll.future.result?.error as? FutureError == .aborted)
        #expect(cancelledAll.disposals.value == 1)
    }

    @Test("an abandoned operation with several continuations frees them all; each can still be cancelled")
    func abandonedWithSeveral() {
        let count = LiveFutureCount()
        count.track {
            let operation = Operation<Int>(on: .none)
            let kept = operation.future.map(on: .none) { $0 }
            for _ in 0..<3 {
                operation.future.map(on: .none) { $0 + 1 }.onValue(on: .none) { _ in }
            }
            expectDebugDiagnostic(containing: "released its completion callback without calling it") {
                operation.abandon()
            }
            #expect(kept.result == nil)
            kept.cancel()
            #expect(kept.result?.error as? FutureError == .aborted)
        }
        #expect(count.value == 0)
    }

    @Test("a dropped pending future with several continuations releases them all")
    func droppedWithSeveral() {
        let count = LiveFutureCount()
        count.track {
            let forever = Future<Int>(.forever)
            for _ in 0..<5 { forever.map(on: .none) { $0 }.onValue(on: .none) { _ in } }
            let observers = (0..<3).map { _ in forever.map(on: .none) { $0 } }
            observers[1].cancel()
            #expect(observers[1].result?.error as? FutureError == .aborted)
            #expect(forever.result == nil)
        }
        #expect(count.value == 0)
    }

    @Test("a chain on a never-completing future, or on a flatMap that returned one, is freed once dropped")
    func chainOnForeverIsFreed() {
        let count = LiveFutureCount()
        count.track {
            _ = Future<Int>(.forever).map(on: .none) { $0 }.onValue(on: .none) { _ in }.map(on: .none) { $0 }
            let operation = Operation<Int>(on: .none)
            _ = operation.future.flatMap(on: .none) { _ in Future<Int>(.forever) }.map(on: .none) { $0 }
            let bound = operation.future.flatMap(on: .none) { _ in Future<Int>(.forever) }
            operation.succeed(1)
            #expect(bound.result == nil)
            bound.cancel()
            #expect(bound.result?.error as? FutureError == .aborted)
        }
        #expect(count.value == 0)
    }

    @Test("a continuation added to a completed future with several is told at once")
    func addAfterCompletion() {
        let operation = Operation<String>(on: .none)
        let first = operation.future.map(on: .none) { $0 + "1" }
        let second = operation.future.map(on: .none) { $0 + "2" }
        operation.succeed("v")
        #expect(first.result?.value == "v1")
        #expect(second.result?.value == "v2")
        #expect(operation.future.map(on: .none) { $0 + "3" }.result?.value == "v3")
    }

    @Test("an operation's disposable, an object, a value or another future's, is disposed once on completion or cancellation, with continuations held alongside")
    func disposableNextToContinuations() {
        let disposals = Shared(0)
        struct CountingDisposable: Disposable {
            let disposals: Shared<Int>
            func dispose() { disposals.mutate { $0 += 1 } }
        }
        let makers: [@Sendable () -> Disposable] = [
            { Disposer { disposals.mutate { $0 += 1 } } },
            { CountingDisposable(disposals: disposals) },
            // Another future's `disposable`: disposing it cancels that future, whose operation's
            // disposer counts.
            {
                Future<Int>(on: .none) { completion in
                    Disposer {
                        disposals.mutate { $0 += 1 }
                        _ = completion  // kept until disposed, like a pending operation
                    }
                }.disposable
            },
        ]
        for make in makers {
            for continuations in [0, 1, 3] {
                for cancels in [false, true] {
                    disposals.mutate { $0 = 0 }
                    let completion = Shared<(@Sendable (Result<Int>) -> Void)?>(nil)
                    let future = Future<Int>(on: .none) { done in
                        completion.mutate { $0 = done }
                        return make()
                    }
                    let observers = (0..<continuations).map { offset in future.map(on: .none) { $0 + offset } }
                    #expect(disposals.value == 0)
                    if cancels {
                        if observers.isEmpty { future.cancel() }
                        for observer in observers { observer.cancel() }
                        #expect(future.result?.error as? FutureError == .aborted)
                    } else {
                        completion.value?(.success(10))
                        #expect(future.result?.value == 10)
                        #expect(observers.map { $0.result?.value } == (0..<continuations).map { 10 + $0 })
                    }
                    #expect(disposals.value == 1)
                    let dropped = completion.mutate { $0.take() }
                    _ = dropped
                }
            }
        }
    }

    @Test("a never-completing future dropped with its operation's disposable and a continuation releases both, without disposing")
    func droppedHoldingContinuationAndDisposable() {
        final class Tracked: Disposable, @unchecked Sendable {
            // @unchecked Sendable: `disposals` is a `Shared`, which locks.
            let disposals: Shared<Int>
            init(_ disposals: Shared<Int>) { self.disposals = disposals }
            func dispose() { disposals.mutate { $0 += 1 } }
        }
        let count = LiveFutureCount()
        let disposals = Shared(0)
        weak var released: Tracked?
        count.track {
            let tracked = Tracked(disposals)
            released = tracked
            let operation = Operation<Int>(on: .none)
            // A flatMap waiting on a future that holds its operation's disposable next to its
            // continuation; the operation then drops its callback, and the test drops the rest.
            let bound = operation.future.flatMap(on: .none) { _ in Future<Int>(on: .none) { _ in tracked } }
            bound.map(on: .none) { $0 + 1 }.onValue(on: .none) { _ in }
            expectDebugDiagnostic(containing: "released its completion callback without calling it") {
                operation.succeed(1)
            }
            #expect(bound.result == nil)
        }
        #expect(released == nil)
        #expect(disposals.value == 0)
        #expect(count.value == 0)
    }

    @Test("cancelling a flatMap that waits on the future its step returned cancels that future, and its later completion changes nothing")
    func cancelledWhileBoundToInner() {
        let count = LiveFutureCount()
        count.track {
            let upstream = Operation<Int>(on: .none)
            let inner = Operation<String>(on: .none)
            let bound = upstream.future.flatMap(on: .none) { _ in inner.future }
            upstream.succeed(1)
            #expect(bound.result == nil)
            bound.cancel()
            #expect(bound.result?.error as? FutureError == .aborted)
            #expect(inner.future.result?.error as? FutureError == .aborted)
            #expect(inner.disposals.value == 1)
            inner.succeed("late")
            #expect(bound.result?.error as? FutureError == .aborted)
            let told = Shared<[String]>([])
            bound.onResult(on: .none) { result in told.mutate { $0.append("\(result.error as? FutureError == .aborted)") } }
            #expect(told.value == ["true"])
        }
        #expect(count.value == 0)
    }

    @Test("a cancelled future reads as aborted everywhere: result, a continuation added later, and get()")
    func cancelledReadsAsAborted() async {
        let operation = Operation<[Int]>(on: .none)
        let future = operation.future
        future.cancel()
        #expect(operation.disposals.value == 1)
        #expect(future.isCompleted)
        #expect(future.result?.error as? FutureError == .aborted)
        #expect(future.map(on: .none) { $0.count }.result?.error as? FutureError == .aborted)
        await #expect(throws: FutureError.aborted) { try await future.get() }
    }

    @Test("results of every size read back whole and are released with the future: in place up to three words, boxed beyond, and errors")
    func resultsOfEverySize() {
        final class Token: Sendable {}
        struct Small: Sendable { let token: Token }
        struct ThreeWords: Sendable { let token: Token; let a: Int; let b: Int }
        struct FourWords: Sendable { let token: Token; let a: Int; let b: Int; let c: Int }
        struct Wide: Sendable { let token: Token; let vector: SIMD4<Double> }
        struct Failure: Error { let token: Token }

        func check<Value: Sendable>(_ make: (Token) -> Value, matches: @escaping (Value, Token) -> Bool) {
            weak var released: Token?
            do {
                let token = Token()
                released = token
                let operation = Operation<Value>(on: .none)
                let mapped = operation.future.map(on: .none) { $0 }
                operation.succeed(make(token))
                #expect(operation.future.result.map { result in result.value.map { matches($0, token) } ?? false } == true)
                #expect(mapped.result.map { result in result.value.map { matches($0, token) } ?? false } == true)
                let failed = Future<Value>(error: Failure(token: token))
                #expect((failed.result?.error as? Failure)?.token === token)
            }
            #expect(released == nil, "\(Value.self): the result was not released with its future")
        }
        check({ Small(token: $0) }, matches: { $0.token === $1 })
        check({ ThreeWords(token: $0, a: 1, b: 2) }, matches: { $0.token === $1 && $0.a == 1 && $0.b == 2 })
        check({ FourWords(token: $0, a: 1, b: 2, c: 3) }, matches: { $0.token === $1 && $0.c == 3 })
        check({ Wide(token: $0, vector: [1, 2, 3, 4]) }, matches: { $0.token === $1 && $0.vector[3] == 4 })
        check({ _ in "a string of more than fifteen bytes, kept out of line" }, matches: { value, _ in value.hasPrefix("a string") })
        check({ [$0] }, matches: { $0.first === $1 })
    }
}
