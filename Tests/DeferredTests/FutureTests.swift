import Deferred
import Dispatch
import Testing

/// A future type of a test's own, to check what conforming to `FutureProtocol` gives.
private struct ConstantFuture: FutureProtocol {
    let value: Int

    func upon(_ executor: any Executor, execute body: @escaping @Sendable (Int) -> Void) {
        let value = value
        executor.submit { body(value) }
    }

    func peek() -> Int? { value }
}

@Suite("Future and the algorithms on FutureProtocol")
struct FutureTests {
    @Test("Future(value:) and Future(_:) with a value are filled at once")
    func filledFutures() {
        #expect(Future(value: 3).peek() == 3)
        #expect(Future(4).peek() == 4)
        #expect(Future<[Int]>([]).peek() == [])
    }

    @Test("Future(deferred) is a read-only view that sees the fill")
    func viewOfDeferred() {
        let deferred = Deferred<Int>()
        let future = Future(deferred)
        #expect(future.peek() == nil)
        deferred.fill(with: 8)
        #expect(future.peek() == 8)
        #expect(future.isFilled)
    }

    @Test("wrapping a Future does not nest wrappers")
    func noNesting() {
        let deferred = Deferred<Int>()
        let once = Future(deferred)
        let twice = Future(once)
        let generic = Future(once.eraseToFuture())
        // A nested wrapper would describe itself through the inner one; these are flat views.
        #expect(String(describing: type(of: twice)) == "Future<Int>")
        deferred.fill(with: 1)
        #expect(twice.peek() == 1)
        #expect(generic.peek() == 1)
    }

    @Test("Future.never is never filled and drops its closures unrun")
    func never() {
        let never = Future<Int>.never
        let executor = CountingInlineExecutor()
        never.upon(executor) { _ in Issue.record("a closure on Future.never ran") }
        #expect(never.peek() == nil)
        #expect(never.wait(until: .now() + .milliseconds(5)) == nil)
        #expect(executor.submissionCount == 0)
    }

    @Test("Future.async runs the work on the executor and gives its result")
    func async() {
        let future = Future<Int>.async(upon: .any()) { 6 * 7 }
        #expect(future.wait(until: .now() + hangGuard) == 42)
    }

    @Test("a type conforming to FutureProtocol gets map, isFilled, wait and a description")
    func customConformance() {
        let constant = ConstantFuture(value: 5)
        #expect(constant.isFilled)
        #expect(constant.wait(until: .now()) == 5)
        #expect(constant.map(upon: CountingInlineExecutor()) { $0 + 1 }.peek() == 6)
        #expect(constant.debugDescription == "ConstantFuture(5)")
    }

    @Test("map(upon:transform:) transforms the value once, on the executor")
    func map() {
        let deferred = Deferred<Int>()
        let executor = CountingInlineExecutor()
        let doubled = deferred.map(upon: executor) { $0 * 2 }
        #expect(doubled.peek() == nil)
        deferred.fill(with: 21)
        #expect(doubled.peek() == 42)
        #expect(doubled.peek() == 42)
        #expect(executor.submissionCount == 1)
    }

    @Test("andThen(upon:start:) gives the value of the future the step starts")
    func andThen() {
        let first = Deferred<Int>()
        let second = Deferred<String>()
        let chained = first.andThen(upon: CountingInlineExecutor()) { value -> Deferred<String> in
            #expect(value == 1)
            return second
        }
        first.fill(with: 1)
        #expect(chained.peek() == nil)
        second.fill(with: "done")
        #expect(chained.peek() == "done")
    }

    @Test("every(per:) recomputes the transform at each read")
    func every() {
        let calls = Shared(0)
        let deferred = Deferred(filledWith: 2)
        let squared = deferred.every { value -> Int in
            calls.mutate { $0 += 1 }
            return value * value
        }
        #expect(squared.peek() == 4)
        #expect(squared.peek() == 4)
        #expect(calls.value == 2)
    }

    @Test("ignored() is filled with Void when the base is")
    func ignored() {
        let deferred = Deferred<Int>()
        let ignored: Future<Void> = deferred.ignored()
        #expect(!ignored.isFilled)
        deferred.fill(with: 1)
        #expect(ignored.isFilled)
    }

    @Test("and(_:) with one to seven others gives a tuple once all are filled")
    func and() {
        let a = Deferred<Int>()
        let pair = a.and(Future(value: "b"))
        let three = a.and(Future(value: "b"), Future(value: 3.0))
        let seven = a.and(
            Future(value: 2), Future(value: 3), Future(value: 4), Future(value: 5), Future(value: 6),
            Future(value: 7))
        let eight = a.and(
            Future(value: 2), Future(value: 3), Future(value: 4), Future(value: 5), Future(value: 6),
            Future(value: 7), Future(value: "8"))
        #expect(pair.peek() == nil)
        #expect(eight.peek() == nil)
        a.fill(with: 1)
        #expect(pair.peek()?.1 == "b")
        #expect(three.peek()?.2 == 3.0)
        if let values = seven.peek() {
            #expect([values.0, values.1, values.2, values.3, values.4, values.5, values.6] == Array(1...7))
        } else {
            Issue.record("and with six others is not filled")
        }
        #expect(eight.peek()?.7 == "8")
        #expect(eight.peek()?.0 == 1)
    }

    @Test("allFilled() keeps the input order and gives [] for no input")
    func allFilled() {
        let inputs = (0..<5).map { _ in Deferred<Int>() }
        let all = inputs.allFilled()
        for index in [3, 0, 4, 1] {
            inputs[index].fill(with: index * 10)
        }
        #expect(all.peek() == nil)
        inputs[2].fill(with: 20)
        #expect(all.peek() == [0, 10, 20, 30, 40])
        #expect([Deferred<Int>]().allFilled().peek() == [])
    }

    @Test("allFilled() collects values filled concurrently")
    func allFilledConcurrently() {
        let inputs = (0..<1_000).map { _ in Deferred<Int>() }
        let all = inputs.allFilled()
        DispatchQueue.concurrentPerform(iterations: inputs.count) { inputs[$0].fill(with: $0) }
        #expect(all.wait(until: .now() + hangGuard) == Array(0..<1_000))
    }

    @Test("firstFilled() gives the first value filled; an empty sequence never fills")
    func firstFilled() {
        let inputs = (0..<3).map { _ in Deferred<Int>() }
        let first = inputs.firstFilled()
        #expect(first.peek() == nil)
        inputs[1].fill(with: 1)
        inputs[0].fill(with: 0)
        #expect(first.peek() == 1)
        #expect([Deferred<Int>]().firstFilled().peek() == nil)
    }
}
