// Code written the way Flow's futures guide, its lifetime-management guide and its own tests write
// it, compiled in Swift 5 language mode: captured `var`s mutated in callbacks, defaulted arguments,
// `Future(.forever)`, `completion(.success)`, `Mutex().protect`. It must compile with no warning.
import Flow
import Foundation
import XCTest

private struct GuideError: Error {}

/// A data source the way the futures guide writes one: a future from a callback API.
private func fetchNumber(_ number: Int, failing: Bool = false) -> Future<Int> {
    Future { completion in
        DispatchQueue.global().async {
            if failing {
                completion(.failure(GuideError()))
            } else {
                completion(.success(number))
            }
        }
        return NilDisposer()
    }
}

/// A `Future<Void>` completed the way Flow code writes it.
private func save() -> Future<Void> {
    Future { completion in
        completion(.success)
        return NilDisposer()
    }
}

final class FlowGuideCodeTests: XCTestCase {
    func testCapturedVarsMutatedInCallbacks() {
        let done = expectation(description: "done")
        var values = [Int]()
        var errors = 0
        var ended = false
        fetchNumber(1)
            .map { $0 * 2 }
            .onValue { values.append($0) }
            .flatMap { _ in fetchNumber(3, failing: true) }
            .onError { _ in errors += 1 }
            .always {
                ended = true
                done.fulfill()
            }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(values, [2])
        XCTAssertEqual(errors, 1)
        XCTAssertTrue(ended)
    }

    func testVoidFuturesCompleteWithSuccess() {
        let done = expectation(description: "saved")
        var saved = false
        save().onValue { saved = true }.always { done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertTrue(saved)
    }

    func testForeverWithSelectAndReplace() {
        let done = expectation(description: "replaced")
        var replacement: Int?
        var selected: Int?
        select(Future<Void>(.forever), or: Future(5)).onValue { either in
            selected = either.right
        }
        // The dropped callback is reported in debug builds: captured, so that the test run prints nothing.
        let (_, reports) = FlowDiagnostics.capturingReports {
            Future<Int> { _ in NilDisposer() }
                .replace(with: 7, after: 0.01)
                .onValue { replacement = $0 }
                .always { done.fulfill() }
        }
        #if DEBUG
        XCTAssertEqual(reports.map(\.message).filter { $0.contains("released its completion callback") }.count, 1)
        #else
        XCTAssertTrue(reports.isEmpty)
        #endif
        wait(for: [done], timeout: 10)
        XCTAssertEqual(selected, 5)
        XCTAssertEqual(replacement, 7)
    }

    func testJoinSelectAndAbort() {
        let done = expectation(description: "joined")
        var pair: (Int, String)?
        var all: [Int] = []
        var aborted = false
        join(Future(1), Future("one")).onValue { pair = $0 }
        join([fetchNumber(1), fetchNumber(2), fetchNumber(3)]).onValue { all = $0 }.always {
            Future<Int>(.forever).abort(forFutures: [Future()]).onError { error in
                aborted = (error as? FutureError) == .aborted
            }.always { done.fulfill() }
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(pair?.0, 1)
        XCTAssertEqual(pair?.1, "one")
        XCTAssertEqual(all, [1, 2, 3])
        XCTAssertTrue(aborted)
    }

    func testOnErrorRepeatWithDelays() {
        let done = expectation(description: "repeated")
        var attempts = 0
        var result: Int?
        Future<Int> { completion in
            attempts += 1
            if attempts < 3 {
                completion(.failure(GuideError()))
            } else {
                completion(.success(attempts))
            }
            return NilDisposer()
        }
        .onErrorRepeat(delayBetweenRepetitions: 0.01, maxRepetitions: 5)
        .onValue { result = $0 }
        .always { done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(result, 3)

        let collected = expectation(description: "collected")
        var counter = 0
        var samples: [Int] = []
        Future { () -> Int in
            counter += 1
            return counter
        }
        .repeatAndCollect(repeatCount: 2)
        .onValue { samples = $0 }
        .always { collected.fulfill() }
        wait(for: [collected], timeout: 10)
        XCTAssertEqual(samples, [1, 2, 3])
    }

    func testMutexAndDisposeBag() {
        let mutex = Mutex()
        var total = 0
        DispatchQueue.concurrentPerform(iterations: 4) { index in
            mutex.protect { total += index }
        }
        XCTAssertEqual(mutex.protect { total }, 6)

        var disposed = 0
        let bag = DisposeBag()
        bag += { disposed += 1 }
        bag += Disposer { disposed += 1 }
        bag += Future<Int>(.forever)
        let inner = bag.innerBag()
        inner += { disposed += 1 }
        bag.dispose()
        XCTAssertEqual(disposed, 3)

        let maybeBag: DisposeBag? = nil
        maybeBag += { disposed += 100 }
        XCTAssertEqual(disposed, 3)

        // A bag is reused round after round, as Flow code rebuilding its listeners does.
        bag += { disposed += 10 }
        XCTAssertEqual(disposed, 3)
        XCTAssertFalse(bag.isEmpty)
        bag.dispose()
        XCTAssertEqual(disposed, 13)
        XCTAssertTrue(bag.isEmpty)
        _ = DisposeBag([NilDisposer(), Disposer()])
    }

    func testFutureQueueRunsInOrder() {
        let done = expectation(description: "queue")
        var order: [Int] = []
        let queue = FutureQueue()
        queue.enqueue { fetchNumber(1).onValue { order.append($0) } }
        queue.enqueue { () -> Int in
            order.append(2)
            return 2
        }
        queue.enqueue { fetchNumber(3) }.onValue { order.append($0) }.always { done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(order, [1, 2, 3])
        XCTAssertTrue(queue.isEmpty)
    }

    func testSchedulers() {
        let done = expectation(description: "scheduled")
        var ranOnBackground = false
        let background = Scheduler(label: "compat.background")
        Future(on: background) { () -> Int in
            ranOnBackground = background.isExecuting
            return 1
        }
        .delay(by: 0.001)
        .onValue(on: .concurrentBackground) { _ in }
        .always { done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertTrue(ranOnBackground)
        var syncValue = 0
        background.sync { syncValue = 5 }
        XCTAssertEqual(syncValue, 5)
        let custom = Scheduler(identifyingObject: background, async: { work in background.async(execute: work) },
                               sync: { work in background.sync(execute: work) })
        XCTAssertEqual(custom, Scheduler(identifyingObject: background, async: { _ in }, sync: { _ in }))
    }

    func testPerformWhileAndIgnoreCanceling() {
        let done = expectation(description: "performed")
        var running = false
        var stopped = false
        Future(1).performWhile {
            running = true
            return Disposer { stopped = true }
        }.always { done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertTrue(running)

        var cancelled = false
        // Debug builds report the shield's operation as having dropped its callback, though it only
        // listens to a Future(.forever): captured, so that the test run prints nothing.
        let (shielded, reports) = FlowDiagnostics.capturingReports {
            Future<Int>(.forever).onCancel { cancelled = true }.ignoreCanceling()
        }
        XCTAssertLessThanOrEqual(reports.count, 1)
        shielded.cancel()
        XCTAssertFalse(cancelled)
        _ = stopped
    }

    func testRecursiveAndResultHelpers() {
        let factorial: (Int) -> Int = recursive { n, factorial in
            n > 1 ? n * (factorial(n - 1) ?? 0) : 1
        }
        XCTAssertEqual(factorial(4), 24)
        let result = Result<Int> { 3 }
        XCTAssertEqual(result.value, 3)
        XCTAssertEqual(try result.getValue(), 3)
        let void: Result<Void> = .success
        XCTAssertNotNil(void.value)
        var either: Either<Int, Int> = .left(1)
        either.right = 2
        XCTAssertEqual(either.any, 2)
    }

    func testOnErrorOrCancelAndSingleTaskPerformer() {
        let done = expectation(description: "performed")
        var sawError = false
        let performer = SingleTaskPerformer<Int>()
        performer.performSingleTask { fetchNumber(1, failing: true) }
            .onErrorOrCancel { error in sawError = error != nil }
            .always { done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertTrue(sawError)
    }
}

/// A callback API the way Flow's futures guide wraps one (its example wraps `URLSession`).
private final class FakeSession {
    var requests = 0

    func dataTask(for path: String, completion: @escaping (String?, Error?) -> Void) -> FakeTask {
        requests += 1
        return FakeTask {
            if path.hasPrefix("bad") {
                completion(nil, GuideError())
            } else {
                completion("data of \(path)", nil)
            }
        }
    }

    func data(at path: String) -> Future<String> {
        return Future { completion in
            let task = self.dataTask(for: path) { data, error in
                if let error = error {
                    completion(.failure(error))
                } else {
                    completion(.success(data!))
                }
            }
            task.resume()
            return Disposer { task.cancel() }
        }
    }
}

private final class FakeTask {
    private var work: (() -> Void)?
    init(_ work: @escaping () -> Void) { self.work = work }
    func resume() {
        let work = self.work
        DispatchQueue.global().async { work?() }
    }
    func cancel() { work = nil }
}

final class FlowFuturesGuideTests: XCTestCase {
    func testTheGuidesHappyFlow() {
        let session = FakeSession()
        let done = expectation(description: "friends")
        var friends: [String] = []
        var failure: Error?
        session.data(at: "user").map { data -> String in
            guard !data.isEmpty else { throw GuideError() }
            return data
        }.flatMap { user in
            session.data(at: "friends of \(user)")
        }.map { data in
            [data]
        }.onValue { value in
            friends = value
        }.onError { error in
            failure = error
        }.always {
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(friends, ["data of friends of data of user"])
        XCTAssertNil(failure)
    }

    func testCombiningRepeatingAndScheduling() {
        let session = FakeSession()
        let done = expectation(description: "combined")
        let imageProcessing = Scheduler(label: "image processing", attributes: .concurrent)
        var pair: (String, String)?
        var first: String?
        var retries = 0
        let friend = session.data(at: "friend")
        let pet = session.data(at: "pet")
        join(friend, pet).onValue { pair = $0 }
        select(friend, or: pet).onValue { either in
            switch either {
            case .left(let value): first = value
            case .right(let value): first = value
            }
        }
        session.data(at: "bad").onErrorRepeat { _ -> Future<Bool> in
            retries += 1
            return Future(retries < 3)
        }
        .map(on: imageProcessing) { $0.uppercased() }
        .onResult { _ in }
        .always { done.fulfill() }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(retries, 3)
        XCTAssertEqual(session.requests, 5)
        XCTAssertNotNil(first)
        _ = pair
    }

    private var recorded: [String] = []

    private func record(_ value: String) {
        recorded.append(value)
    }

    func testFunctionValuesAsCallbacks() {
        let done = expectation(description: "recorded")
        let session = FakeSession()
        func finish() { done.fulfill() }
        session.data(at: "profile").onValue(record).always(finish)
        wait(for: [done], timeout: 10)
        XCTAssertEqual(recorded, ["data of profile"])
    }

    func testLifetimeManagement() {
        var removed: [String] = []
        let bag = DisposeBag()
        bag += Disposer { removed.append("observer") }
        bag += { removed.append("closure") }
        let innerBag = bag.innerBag()
        innerBag += { removed.append("inner") }
        bag += FakeSession().data(at: "image").disposable
        bag.dispose()
        XCTAssertEqual(removed, ["observer", "closure", "inner"])
    }
}
