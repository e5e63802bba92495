// The Flow half of the tour: the futures guide, step by step.
import Flow
import FlowTimers

/// Prints a section title.
func section(_ title: String) {
    print("\n== \(title)")
}

struct User: Sendable {
    let name: String
    let friendIDs: [Int]
}

/// A pretend remote call: completes on the main loop a little later.
func fetchUser(id: Int) -> Future<User> {
    Future { completion in
        let timer = Scheduler.main.async(after: 0.01) {
            completion(.success(User(name: "Ada", friendIDs: [2, 3])))
        }
        return timer   // disposed if the future is cancelled: the call stops
    }
}

func fetchName(id: Int) -> Future<String> {
    Future(["Grace", "Linus"][id - 2])
}

struct FlakyError: Error, CustomStringConvertible {
    var description: String { "the service is busy" }
}

/// The Flow part, as one future that completes when every step has printed.
func flowTour() -> Future<Void> {
    section("Futures: a result that comes later")
    let user = fetchUser(id: 1)
    print("fetchUser returned at once; completed yet? \(user.isCompleted)")

    return user.onValue { user in
        print("onValue: \(user.name), on the main loop: \(Scheduler.main.isExecuting)")
    }
    .flatMap { user -> Future<[String]> in
        section("map and flatMap: chain the happy path")
        return join(user.friendIDs.map(fetchName)).map { names in names.map { $0.uppercased() } }
    }
    .flatMap { names -> Future<Void> in
        print("friends, joined in order and mapped: \(names)")

        section("Errors skip ahead to onError")
        return Future<Int>(error: FlakyError())
            .map { value -> Int in
                print("never printed: the map is skipped")
                return value
            }
            .onError { error in print("onError: \(error)") }
            .mapError { _ in 0 }
            .toVoid()
    }
    .flatMap { _ -> Future<Void> in
        section("select: the first of two to complete wins, the other is cancelled")
        let slow = Future<String> { completion in
            Scheduler.main.async(after: 1) { completion(.success("slow")) }
        }
        .onCancel { print("the slow one was cancelled") }
        let fast = Future(42).delay(by: 0.01)
        return select(slow, or: fast).map { winner in print("winner: \(winner)") }
    }
    .flatMap { _ -> Future<Void> in
        section("onErrorRepeat: the operation runs again after a failure")
        let attempts = LoopBoundBox(0, loop: .main)
        return Future<String> { completion in
            attempts.value += 1
            print("attempt \(attempts.value)")
            completion(attempts.value < 3 ? .failure(FlakyError()) : .success("ok"))
            return NilDisposer()
        }
        .onErrorRepeat(delayBetweenRepetitions: 0.01, maxRepetitions: 5)
        .map { result in print("repeated until: \(result)") }
    }
    .flatMap { _ -> Future<Void> in
        section("Schedulers: say where a callback runs")
        let imageProcessing = Scheduler(label: "image processing", attributes: .concurrent)
        return Future(7)
            .map(on: imageProcessing) { value -> Int in
                print("map on the Dispatch scheduler: \(imageProcessing.isExecuting)")
                return value * 6
            }
            .map { value in print("back on the main loop with \(value): \(Scheduler.main.isExecuting)") }
    }
    .flatMap { _ -> Future<Void> in
        section("FutureQueue: one operation at a time, in order")
        let queue = FutureQueue()
        let order = LoopBoundBox([String](), loop: .main)
        let first = queue.enqueue { () -> Future<Void> in
            order.value.append("first starts")
            return Future(()).delay(by: 0.01).map { order.value.append("first ends") }
        }
        let second = queue.enqueue { order.value.append("second runs") }
        return join(first, second).map { _ in print(order.value.joined(separator: ", ")) }
    }
}
