// ============================================================================================
// DEPRECATED NAMES. This is the only test file that uses Deferred's older names (FutureType,
// fill(_:), fillIfUnfulfilled(_:), upon(_:body:), wait(.Forever), joinedValues, IgnoringFuture, ...),
// and the README snippets written with them (shared/seeds/002, the producer of seeds/003, and the
// `IgnoringFuture` snippet of seeds/000 and 001).
//
// Using a deprecated name warns, and CI fails on warnings. So every use sits in a declaration marked
// `@available(*, deprecated)`, where deprecation warnings are silenced, and the tests reach those
// declarations only through the protocol `LegacyNameChecks`, whose requirements are not deprecated:
// calling a deprecated witness through a protocol does not warn.
//
// Adaptations of the snippets, each forced by Swift: extensions declaring stored properties are class
// bodies (each in a namespace, as two snippets declare `FriendsViewController`); `Deferred<Value>` gets
// a `typealias Value`; `/* … */` placeholders are filled in; the closure passed to `upon` in the old
// `fetchFriends(forUser:)` captures `task` weakly as written, which needs the stand-in task to be a class.
// ============================================================================================
import Deferred
import Dispatch
import Foundation
import Testing

/// What the deprecated-name tests check; each requirement is implemented with old names.
protocol LegacyNameChecks: Sendable {
    func oldProtocolNamesStillWork() -> Bool
    func fillUnderscoreFillsOnce() -> (first: Bool, second: Bool, value: Int?)
    func fillIfUnfilledSpellings() -> (Bool, Bool)
    func deferredValueInit() -> Int?
    func uponBody() -> [Int]
    func mapAndFlatMap() -> (Int?, String?)
    func waitTimeouts() -> (now: Int?, interval: Int?, forever: Int?)
    func joinedValuesAndEarliestFilled() -> ([Int]?, Int?)
    func ignoringFuture() -> Bool
    func lockProtected() -> Int
    func seed002ForkJoin() -> [Name]?
    func seed002BasicTasks() -> (Int, Int?)
    func seed002Combining() -> (Int?, [Int]?, Int?)
    func seed002CancellationClient() -> Bool
    func seed002ReadOnlyViews() -> ([Friend]?, [Friend]?, [Friend]?)
    func seed003Producer() -> [Friend]?
}

@Suite("Deprecated names (old code compiles, with warnings at its call sites)")
struct DeprecatedNamesTests {
    private let legacy: any LegacyNameChecks = LegacyNameUser()

    @Test("FutureType, PromiseType and ExecutorType name today's protocols")
    func protocolNames() {
        #expect(legacy.oldProtocolNamesStillWork())
    }

    @Test("fill(_:) fills once and returns whether it did")
    func fillUnderscore() {
        let result = legacy.fillUnderscoreFillsOnce()
        #expect(result.first && !result.second && result.value == 1)
    }

    @Test("fillIfUnfilled(_:) and the README's fillIfUnfulfilled(_:) fill once")
    func fillIfUnfilled() {
        #expect(legacy.fillIfUnfilledSpellings() == (true, false))
    }

    @Test("Deferred(value:) is filled")
    func deferredValue() {
        #expect(legacy.deferredValueInit() == 5)
    }

    @Test("upon(_:body:) runs the closures in order")
    func uponBody() {
        #expect(legacy.uponBody() == [1, 2, 3])
    }

    @Test("map(upon:_:) and flatMap(upon:_:) are map(upon:transform:) and andThen(upon:start:)")
    func mapAndFlatMap() {
        let result = legacy.mapAndFlatMap()
        #expect(result.0 == 4 && result.1 == "2")
    }

    @Test("wait(.Now), wait(.Interval(_:)) and wait(.Forever)")
    func waitTimeouts() {
        let result = legacy.waitTimeouts()
        #expect(result.now == nil && result.interval == nil && result.forever == 3)
    }

    @Test("joinedValues and earliestFilled are allFilled() and firstFilled()")
    func collections() {
        let result = legacy.joinedValuesAndEarliestFilled()
        #expect(result.0 == [1, 2] && result.1 == 1)
    }

    @Test("IgnoringFuture is the Future<Void> that ignored() returns (seeds 000 and 001)")
    func ignoring() {
        #expect(legacy.ignoringFuture())
    }

    @Test("LockProtected is Protected")
    func lockProtected() {
        #expect(legacy.lockProtected() == 2)
    }

    @Test("seed 002: fork–join of friends' names with flatMap and joinedValues")
    func seed002ForkJoin() {
        #expect(legacy.seed002ForkJoin() == ["Ann", "Bo"])
    }

    @Test("seed 002: vending, upon, peek and wait(.Forever)")
    func seed002BasicTasks() {
        let result = legacy.seed002BasicTasks()
        #expect(result.0 == 42 && result.1 == 12)
    }

    @Test("seed 002: and, joinedValues and earliestFilled")
    func seed002Combining() {
        let result = legacy.seed002Combining()
        #expect(result.0 == 1 && result.1 == Array(0..<10) && result.2 == 0)
    }

    @Test("seed 002: cancelling by filling, which cancels the in-flight request")
    func seed002Cancellation() {
        #expect(legacy.seed002CancellationClient())
    }

    @Test("seed 002: read-only views and FriendsStore")
    func seed002ReadOnlyViews() {
        let result = legacy.seed002ReadOnlyViews()
        #expect(result.0 == jimbobsFriends && result.1 == [] && result.2 == jimbobsFriends)
    }

    @Test("seed 003: the producer fetchFriends(for:) with fillIfUnfulfilled(_:)")
    func seed003Producer() {
        #expect(legacy.seed003Producer() == jimbobsFriends)
    }
}

// MARK: - Old names in use

private struct LegacyNameUser: LegacyNameChecks {
    @available(*, deprecated)
    func oldProtocolNamesStillWork() -> Bool {
        func read<F: FutureType>(_ future: F) -> F.Value? { future.peek() }
        func write<P: PromiseType>(_ promise: P, _ value: P.Value) -> Bool { promise.fill(with: value) }
        let executor: any ExecutorType = DispatchQueue.global()
        let deferred = Deferred<Int>()
        return write(deferred, 1) && read(deferred) == 1 && executor is DispatchQueue
    }

    @available(*, deprecated)
    func fillUnderscoreFillsOnce() -> (first: Bool, second: Bool, value: Int?) {
        let deferred = Deferred<Int>()
        let first = deferred.fill(1)
        let second = deferred.fill(2)
        return (first, second, deferred.peek())
    }

    @available(*, deprecated)
    func fillIfUnfilledSpellings() -> (Bool, Bool) {
        let deferred = Deferred<Int>()
        return (deferred.fillIfUnfilled(1), deferred.fillIfUnfulfilled(2))
    }

    @available(*, deprecated)
    func deferredValueInit() -> Int? {
        Deferred(value: 5).peek()
    }

    @available(*, deprecated)
    func uponBody() -> [Int] {
        let deferred = Deferred<Int>()
        let queue = DispatchQueue(label: "legacy upon")
        let order = Shared<[Int]>([])
        deferred.upon(queue, body: { _ in order.mutate { $0.append(1) } })
        deferred.upon(queue as any Executor, body: { _ in order.mutate { $0.append(2) } })
        deferred.upon(queue) { _ in order.mutate { $0.append(3) } }
        deferred.uponMainQueue { _ in }
        deferred.fill(1)
        queue.sync {}
        return order.value
    }

    @available(*, deprecated)
    func mapAndFlatMap() -> (Int?, String?) {
        let inline = CountingInlineExecutor()
        let deferred = Deferred(value: 2)
        let doubled = deferred.map(upon: inline, { $0 * 2 })
        let described = deferred.flatMap(upon: inline, { Deferred(value: String($0)) })
        return (doubled.peek(), described.peek())
    }

    @available(*, deprecated)
    func waitTimeouts() -> (now: Int?, interval: Int?, forever: Int?) {
        let empty = Deferred<Int>()
        let filledLater = Deferred<Int>()
        DispatchQueue.global().async { filledLater.fill(3) }
        return (empty.wait(.Now), empty.wait(.Interval(0.01)), filledLater.wait(.Forever))
    }

    @available(*, deprecated)
    func joinedValuesAndEarliestFilled() -> ([Int]?, Int?) {
        let deferreds = [Deferred(value: 1), Deferred(value: 2)]
        return (deferreds.joinedValues.peek(), deferreds.earliestFilled.peek())
    }

    @available(*, deprecated)
    func ignoringFuture() -> Bool {
        let loader = FriendsLoader()
        let loaded = loader.whenFriendsAreLoaded()
        let wasFilled = loaded.isFilled
        loader.deferredFriends.fill(jimbobsFriends)
        return !wasFilled && loaded.isFilled
    }

    @available(*, deprecated)
    func lockProtected() -> Int {
        let protected = LockProtected(initialValue: 1)
        protected.withWriteLock { $0 += 1 }
        return protected.withReadLock { $0 }
    }

    @available(*, deprecated)
    func seed002ForkJoin() -> [Name]? {
        Seed002.forkJoin()
    }

    @available(*, deprecated)
    func seed002BasicTasks() -> (Int, Int?) {
        Seed002.basicTasks()
    }

    @available(*, deprecated)
    func seed002Combining() -> (Int?, [Int]?, Int?) {
        Seed002.combining()
    }

    @available(*, deprecated)
    func seed002CancellationClient() -> Bool {
        let controller = Seed002.Cancellation.FriendsViewController()
        controller.refreshFriends()
        controller.cancelFriends()
        // The request may have answered first; either way, cancelling leaves the value filled.
        return controller.stashedFriends?.isFilled == true
    }

    @available(*, deprecated)
    func seed002ReadOnlyViews() -> ([Friend]?, [Friend]?, [Friend]?) {
        let controller = Seed002.ReadOnlyViews.FriendsViewController()
        let friends = controller.refreshFriends().wait(.Interval(30))
        controller.cancelFriends()
        let store = Seed002.ReadOnlyViews.FriendsStore()
        let withoutContext = store.getLocalFriends(forUser: jimbob).peek()
        store.context = NSManagedObjectContext()
        return (friends, withoutContext, store.getLocalFriends(forUser: jimbob).peek())
    }

    @available(*, deprecated)
    func seed003Producer() -> [Friend]? {
        Seed003Producer.fetchFriends(for: jimbob).wait(until: .now() + hangGuard)
    }
}

// MARK: - seeds 000 and 001: IgnoringFuture

@available(*, deprecated)
private final class FriendsLoader {
    let deferredFriends = Deferred<[Friend]>()

    func whenFriendsAreLoaded() -> IgnoringFuture<Void> {
        return self.deferredFriends.ignored()
    }
}

// MARK: - seed 002 (Deferred 2's README)

@available(*, deprecated)
private enum Seed002 {
    static func forkJoin() -> [Name]? {
        let filled = DispatchSemaphore(value: 0)
        let result = Shared<[Name]?>(nil)

        // Let's use type annotations to make it easier to see what's going on here.
        let friends: Deferred<[Friend]> = fetchFriends(forUser: jimbob)
        let names: Future<[Name]> = friends.flatMap { (friends: [Friend]) -> Future<[Name]> in
            // fork: get an array of not-yet-determined names
            let names: [Deferred<Name>] = friends.map { AsynchronousCall(.Name, friend: $0) }

            // join: get a not-yet-determined array of now-determined names
            return names.joinedValues
        }

        names.upon { (names: [Name]) in
            // names has been determined - use it!
            dataSource.array = names
            tableView.reloadData()
            result.mutate { $0 = names }
            filled.signal()
        }

        // The synchronous version the README starts from.
        do {
            let friends = getFriends(forUser: jimbob)
            let names = friends.map { $0.name }
            dataSource.array = names
            tableView.reloadData()
        }

        _ = filled.wait(timeout: .now() + hangGuard)
        return result.value
    }

    // Potentially long-running operation.
    static func performOperation() -> Deferred<Int> {
        // 1. Create deferred.
        let deferred = Deferred<Int>()

        // 2. Kick off asynchronous code that will eventually…
        let queue = DispatchQueue.global()
        queue.async {
            let result = computeResult()

            // 3. … fill the deferred in with its value
            deferred.fill(result)
        }

        // 4. Return the (currently still unfilled) deferred
        return deferred
    }

    // Producer
    static func readString() -> Deferred<String> {
        let deferredResult = Deferred<String>()
        // dispatch_async something to fill deferredResult…
        DispatchQueue.global().async { deferredResult.fill("12") }
        return deferredResult
    }

    static func basicTasks() -> (Int, Int?) {
        do {
            let deferredResult = performOperation()

            deferredResult.upon { result in
                print("got \(result)")
            }
        }
        do {
            let deferredResult = performOperation()

            if let result = deferredResult.peek() {
                print("filled with \(result)")
            } else {
                print("currently unfilled")
            }
        }

        // WARNING: Blocks the calling thread!
        let result: Int = performOperation().wait(.Forever)!

        // Consumer
        let deferredInt: Future<Int?> = readString().map { Int($0) }
        return (result, deferredInt.wait(.Interval(30)) ?? nil)
    }

    static func combining() -> (Int?, [Int]?, Int?) {
        // MARK: and

        // `and` creates a new future that is filled once both inputs are available:
        let d1: Deferred<Int> = Deferred(value: 1)
        let d2: Deferred<String> = Deferred(value: "2")
        let dBoth: Future<(Int, String)> = d1.and(d2)

        // MARK: joinedValues

        // `joinedValues` creates a new future that is filled once all inputs are available.
        // All of the input Deferreds must contain the same type.
        var deferreds: [Deferred<Int>] = []
        for i in 0 ..< 10 {
            deferreds.append(Deferred(value: i))
        }

        // Once all 10 input deferreds are filled, the item at index `i` in the array passed to `upon` will contain the result of `deferreds[i]`.
        let allDeferreds: Future<[Int]> = deferreds.joinedValues

        // MARK: earliestFilled

        // `earliestFilled` creates a new future that is filled once any one of its inputs is available.
        // If multiple inputs become available simultaneously, no guarantee is made about which will be selected.
        // Once any one of the 10 inputs is filled, `anyDeferred` will be filled with that value.
        let anyDeferred: Future<Int> = deferreds.earliestFilled
        return (dBoth.peek()?.0, allDeferreds.peek(), anyDeferred.peek())
    }

    // MARK: - Client (Cancellation)

    enum Cancellation {
        final class FriendsViewController {
            typealias Value = [Friend]

            private var friends: Deferred<Value>?

            func refreshFriends() {
                let friends = fetchFriends(forUser: jimbob)
                friends.upon { friends in
                    let names = friends.map { $0.name }
                    dataSource.array = names
                    tableView.reloadData()
                }

                /* Stash the `Deferred<Value>` for defaulting later. */
                self.friends = friends
            }

            func cancelFriends() {
                friends?.fill([])
            }

            var stashedFriends: Deferred<Value>? { friends }
        }
    }

    // MARK: - Read-Only Views

    enum ReadOnlyViews {
        final class FriendsViewController {
            typealias Value = [Friend]

            // `FriendsViewController` is the only of the `Deferred` in its
            // `PromiseType` role, and can use it as it pleases.
            private var friends: Deferred<Value>?

            // Now this method can vend a `Future` and not worry about the
            // rules of accessing its private `Deferred`.
            func refreshFriends() -> Future<[Friend]> {
                let friends = fetchFriends(forUser: jimbob)
                friends.upon { friends in
                    let names = friends.map { $0.name }
                    dataSource.array = names
                    tableView.reloadData()
                }

                /* Stash the `Deferred<Value>` for defaulting later. */
                self.friends = friends

                return Future(friends)
            }

            func cancelFriends() {
                friends?.fill([])
            }

        }

        final class FriendsStore {

            // dependency, injected later on
            var context: NSManagedObjectContext?

            func getLocalFriends(forUser user: User) -> Future<[Friend]> {
                guard let context = context else {
                    // a future can be created with an immediate value, allowing the benefits
                    // of Deferred's design even if values are available already (consider a
                    // stub object, for instance).
                    return Future([])
                }

                let predicate: NSPredicate = NSPredicate(value: true)

                return Friend.findAll(matching: predicate, inContext: context)
            }

        }
    }
}

// MARK: - Producer (seed 002)

@available(*, deprecated)
private func fetchFriends(forUser user: User) -> Deferred<[Friend]> {
    let deferredFriends = Deferred<[Friend]>()
    let session: NSURLSession = NSURLSession()
    let request: NSURLRequest = NSURLRequest()
    let task = session.dataTaskWithRequest(request) { data, response, error in
        let friends: [Friend] = parseFriends(data, response, error)
        // fillIfUnfulfilled since we might be racing with another producer
        // to fill this value
        deferredFriends.fillIfUnfulfilled(friends)
    }

    // arrange to cancel on fill
    deferredFriends.upon { [weak task] _ in
        task?.cancel()
    }

    // start the operation that will eventually resolve the deferred value
    task.resume()

    // finally, pass the deferred value to the caller
    return deferredFriends
}

// MARK: - Producer (seed 003)

/// Seed 002's producer, by a name the seed 003 one can call.
@available(*, deprecated)
private func seed002FetchFriends(_ user: User) -> Deferred<[Friend]> { fetchFriends(forUser: user) }

@available(*, deprecated)
private enum Seed003Producer {
    /// Seed 003's producer is seed 002's, word for word, under the label `for:`.
    static func fetchFriends(for user: User) -> Deferred<[Friend]> {
        seed002FetchFriends(user)
    }
}
