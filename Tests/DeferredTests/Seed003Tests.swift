// The snippets of shared/seeds/003 (Deferred's newest README) that use today's names. Adaptations:
// - `/* … */` placeholders are filled in.
// - `deferreds.allFilled` is written `deferreds.allFilled()` (it is a method; Swift cannot declare a
//   property of the same name beside it) and `deferreds. firstFilled()` loses the space after the dot
//   (Swift rejects whitespace there).
// - `extension FriendsViewController { private var friends: ... }` is a class body (see 000/001).
// The producer `fetchFriends(for:)` uses the old `fillIfUnfulfilled(_:)`: it lives in
// DeprecatedNamesTests.swift; the client here calls a stand-in.
import Deferred
import Dispatch
import Foundation
import Testing

// Potentially long-running operation.
private func performOperation() -> Deferred<Int> {
    // 1. Create deferred.
    let deferred = Deferred<Int>()

    // 2. Kick off asynchronous code that will eventually…
    let queue: DispatchQueue = .global()
    queue.async {
        let result = computeResult()

        // 3. … fill the deferred in with its value
        deferred.fill(with: result)
    }

    // 4. Return the (currently still unfilled) deferred
    return deferred
}

// Producer
private func readString() -> Deferred<String> {
    let deferredResult = Deferred<String>()
    // call something async to fill deferredResult…
    DispatchQueue.global().async { deferredResult.fill(with: "12") }
    return deferredResult
}

// MARK: - Client

private final class FriendsViewController {
    typealias Value = [Friend]

    private var friends: Deferred<Value>?

    func refreshFriends() {
        let friends = fetchFriends(for: jimbob)
        friends.upon(.main) { friends in
            let names = friends.map { $0.name }
            dataSource.array = names
            tableView.reloadData()
        }

        // Stash the `Deferred<Value>` for defaulting later.
        self.friends = friends
    }

    func cancelFriends() {
        friends?.fill(with: [])
    }

    var stashedFriends: Deferred<Value>? { friends }
}

@Suite("README snippets, seed 003")
struct Seed003Tests {
    @Test("Vending a Future Value, Taking Action, Peeking and Blocking")
    func basicTasks() {
        let printed = DispatchSemaphore(value: 0)
        do {
            let deferredResult = performOperation()

            deferredResult.upon { result in
                print("got \(result)")
                printed.signal()
            }
        }
        expectSignal(printed, "the upon closure")

        do {
            let deferredResult = performOperation()

            if let result = deferredResult.peek() {
                print("filled with \(result)")
            } else {
                print("currently unfilled")
            }
        }

        // warning: Blocks the calling thread!
        let result: Int = performOperation().wait(until: .distantFuture)!
        #expect(result == 42)
    }

    @Test("Sequencing Deferreds with map(upon:transform:)")
    func sequencing() {
        // Consumer
        let deferredInt: Future<Int?> = readString().map(upon: .any()) { Int($0) }
        #expect(deferredInt.wait(until: .now() + hangGuard) == .some(12))
    }

    @Test("Combining Deferreds with and, allFilled and firstFilled")
    func combining() {
        // MARK: and

        // `and` creates a new future that is filled once both inputs are available:
        let d1: Deferred<Int> = Deferred(filledWith: 1)
        let d2: Deferred<String> = Deferred()
        let dBoth: Future<(Int, String)> = d1.and(d2)
        #expect(dBoth.peek() == nil)
        d2.fill(with: "two")
        #expect(dBoth.peek()?.0 == 1)
        #expect(dBoth.peek()?.1 == "two")

        // MARK: allFilled

        // `allFilled` creates a new future that is filled once all inputs are available.
        // All of the input Deferreds must contain the same type.
        var deferreds: [Deferred<Int>] = []
        for i in 0 ..< 10 {
            deferreds.append(Deferred(filledWith: i))
        }

        // Once all 10 input deferreds are filled, the item at index `i` in the array passed to `upon` will contain the result of `deferreds[i]`.
        let allDeferreds: Future<[Int]> = deferreds.allFilled()
        #expect(allDeferreds.peek() == Array(0 ..< 10))

        // MARK: firstFilled

        // `firstFilled ` creates a new future that is filled once any one of its inputs is available.
        // If multiple inputs become available simultaneously, no guarantee is made about which will be selected.
        // Once any one of the 10 inputs is filled, `anyDeferred` will be filled with that value.
        let anyDeferred: Future<Int> = deferreds.firstFilled()
        #expect(anyDeferred.peek() == 0)
    }

    @Test("Cancellation: the client defaults its Deferred to an empty list")
    func cancellationClient() {
        let controller = FriendsViewController()
        controller.refreshFriends()
        controller.cancelFriends()
        let friends = controller.stashedFriends?.wait(until: .now() + hangGuard)
        #expect(friends == [] || friends == jimbobsFriends)
    }
}
