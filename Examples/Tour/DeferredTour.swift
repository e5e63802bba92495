// The Deferred half of the tour: the Deferred README, step by step.
import Deferred
import Dispatch

/// The Deferred part, whose closures run on `mainLoop` (Flow's main scheduler, as an `Executor`).
/// `done` is filled once every step has printed.
func deferredTour(on mainLoop: any Executor, done: Deferred<Void>) {
    section("Deferred: fill once, upon runs the closures in order")
    let deferred = Deferred<Int>()
    print("peek before fill: \(String(describing: deferred.peek()))")
    deferred.upon(mainLoop) { value in print("first upon: \(value)") }
    deferred.upon(mainLoop) { value in print("second upon: \(value)") }
    print("fill: \(deferred.fill(with: 1)), fill again: \(deferred.fill(with: 2))")
    print("peek after fill: \(String(describing: deferred.peek()))")

    section("A read-only Future hides fill")
    let readOnly: Future<Int> = Future(deferred)
    readOnly.map(upon: mainLoop) { $0 * 10 }.upon(mainLoop) { print("mapped: \($0)") }

    section("Combining: and, allFilled, firstFilled")
    let name = Deferred<String>()
    let age = Deferred<Int>()
    name.and(age).upon(mainLoop) { pair in print("and: \(pair.0) is \(pair.1)") }
    name.fill(with: "Ada")
    age.fill(with: 36)
    let many = (0..<3).map { _ in Deferred<Int>() }
    many.allFilled().upon(mainLoop) { values in print("allFilled: \(values)") }
    many.firstFilled().upon(mainLoop) { value in print("firstFilled: \(value)") }
    for (index, each) in many.enumerated().reversed() { each.fill(with: index) }

    section("wait blocks a thread that is not the loop's")
    let background = Deferred<String>()
    DispatchQueue.global().async {
        let result = Deferred<String>()
        DispatchQueue.global().async { result.fill(with: "filled on another thread") }
        background.fill(with: result.wait(until: .distantFuture) ?? "timed out")
    }
    background.upon(mainLoop) { value in
        print("wait returned: \(value)")
        done.fill(with: ())
    }
}
