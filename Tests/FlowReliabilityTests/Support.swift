import Dispatch
import Flow
import Foundation
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A generous bound on waits for things that happen within milliseconds or seconds: reached only
/// when a test is broken, so that it fails instead of hanging CI. Not a timing assertion.
let reliabilityHangGuard: DispatchTimeInterval = .seconds(120)

/// A value guarded by a `pthread_mutex_t`.
///
/// The tests do not use `Synchronization.Mutex` for shared state: on Linux ThreadSanitizer does not
/// see its futex-based locking and would report the accesses it guards as races. It intercepts
/// `pthread_mutex_lock`, so state guarded by this class is seen as synchronised.
final class Guarded<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is read and written only between `pthread_mutex_lock` and
    // `pthread_mutex_unlock` on `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @discardableResult
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}

/// Runs `body(index)` on `count` new threads (not Dispatch workers, which on a two-core machine would
/// run two at a time), released together, and waits for all of them.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let ready = AtomicCounter()
    let finished = DispatchSemaphore(value: 0)
    let release = Guarded(false)
    for index in 0..<count {
        let thread = Thread {
            ready.value.add(1, ordering: .relaxed)
            while !release.current { sched_yield() }
            body(index)
            finished.signal()
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
    while ready.value.load(ordering: .relaxed) < count { sched_yield() }
    release.withLock { $0 = true }
    // A stress thread runs for minutes under ThreadSanitizer: the bound is for a hang, not slowness.
    for _ in 0..<count {
        let result = finished.wait(timeout: .now() + .seconds(1800))
        #expect(result == .success, "a stress thread did not finish")
    }
}

/// An atomic counter that closures can share.
final class AtomicCounter: Sendable {
    let value = Atomic<Int>(0)

    var current: Int { value.load(ordering: .acquiring) }

    @discardableResult
    func increment() -> Int { value.add(1, ordering: .acquiringAndReleasing).newValue }
}

/// Where a callback must run, checked with facts the library does not compute itself: the loop
/// thread's `pthread_self()`, and a Dispatch queue's specific value.
enum Place: Int, Sendable, CaseIterable {
    case loopA, loopB, queue, anywhere
}

/// The schedulers of a stress test: two loops on threads of their own and a serial Dispatch queue.
final class StressPlaces: Sendable {
    let loopA = EventLoop.startOnNewThread(name: "stress.a")
    let loopB = EventLoop.startOnNewThread(name: "stress.b")
    let dispatchQueue = DispatchQueue(label: "stress.queue")
    let queueScheduler: Scheduler
    private let threadA: pthread_t
    private let threadB: pthread_t
    private static let queueKey = DispatchSpecificKey<Int>()

    init() {
        queueScheduler = Scheduler(queue: dispatchQueue)
        dispatchQueue.setSpecific(key: StressPlaces.queueKey, value: 7)
        threadA = loopA.scheduler.sync { pthread_self() }
        threadB = loopB.scheduler.sync { pthread_self() }
    }

    func scheduler(_ place: Place) -> Scheduler {
        switch place {
        case .loopA: return loopA.scheduler
        case .loopB: return loopB.scheduler
        case .queue: return queueScheduler
        case .anywhere: return .none
        }
    }

    /// Whether the calling thread is `place`.
    func isCurrent(_ place: Place) -> Bool {
        switch place {
        case .loopA: return pthread_equal(pthread_self(), threadA) != 0
        case .loopB: return pthread_equal(pthread_self(), threadB) != 0
        case .queue: return DispatchQueue.getSpecific(key: StressPlaces.queueKey) == 7
        case .anywhere: return true
        }
    }

    /// Waits until the loops and the queue have run everything submitted before this call.
    func drain() {
        for _ in 0..<2 {
            let done = DispatchSemaphore(value: 0)
            loopA.execute { done.signal() }
            loopB.execute { done.signal() }
            dispatchQueue.async { done.signal() }
            for _ in 0..<3 { _ = done.wait(timeout: .now() + reliabilityHangGuard) }
        }
    }

    func shutdown() {
        drain()
        loopA.shutdown()
        loopB.shutdown()
    }
}

/// Counts what went wrong across every callback of a stress test.
final class StressLedger: Sendable {
    let callbacks = Atomic<Int>(0)
    let wrongPlace = Atomic<Int>(0)
    let duplicates = Atomic<Int>(0)
    let missing = Atomic<Int>(0)
    let wrongValue = Atomic<Int>(0)
    let operations = Atomic<Int>(0)

    func count(_ operations: Int) { self.operations.add(operations, ordering: .relaxed) }

    func expectClean(_ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(wrongPlace.load(ordering: .acquiring) == 0, "\(what): callbacks ran on the wrong scheduler", sourceLocation: sourceLocation)
        #expect(duplicates.load(ordering: .acquiring) == 0, "\(what): callbacks ran more than once", sourceLocation: sourceLocation)
        #expect(missing.load(ordering: .acquiring) == 0, "\(what): callbacks never ran", sourceLocation: sourceLocation)
        #expect(wrongValue.load(ordering: .acquiring) == 0, "\(what): callbacks saw the wrong value", sourceLocation: sourceLocation)
    }
}

/// One callback that must run on `place`: counts its runs and where they happened.
final class Probe: Sendable {
    let place: Place
    let runs = Atomic<Int>(0)

    init(_ place: Place) { self.place = place }

    func hit(_ places: StressPlaces, _ ledger: StressLedger) {
        if runs.add(1, ordering: .acquiringAndReleasing).newValue > 1 {
            ledger.duplicates.add(1, ordering: .relaxed)
        }
        ledger.callbacks.add(1, ordering: .relaxed)
        if !places.isCurrent(place) { ledger.wrongPlace.add(1, ordering: .relaxed) }
    }

    var runCount: Int { runs.load(ordering: .acquiring) }
}

/// Work handed from one stress thread to another, run when the receiver next looks.
final class Mailbox: Sendable {
    private let work = Guarded<[@Sendable () -> Void]>([])

    func post(_ job: @escaping @Sendable () -> Void) { work.withLock { $0.append(job) } }

    func drain() {
        let jobs = work.withLock { jobs -> [@Sendable () -> Void] in
            let taken = jobs
            jobs = []
            return taken
        }
        for job in jobs { job() }
    }
}

/// A pending future and the means to complete it from anywhere.
final class Promise<Value: Sendable>: Sendable {
    let future: Future<Value>
    private let completion: Guarded<(@Sendable (Result<Value>) -> Void)?>

    init() {
        let completion = Guarded<(@Sendable (Result<Value>) -> Void)?>(nil)
        self.completion = completion
        future = Future(on: .none) { done in
            completion.withLock { $0 = done }
            return Disposer {
                // Released outside the lock: releasing it may run deinitialisers.
                let dropped = completion.withLock { $0.take() }
                _ = dropped
            }
        }
    }

    func complete(_ result: Result<Value>) {
        let done = completion.withLock { $0 }
        done?(result)
    }

    func succeed(_ value: Value) { complete(.success(value)) }
}

/// Spins until `condition` holds, running `meanwhile` between checks; records a failure after the
/// hang guard.
func waitUntil(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation,
    meanwhile: () -> Void = {}, _ condition: () -> Bool
) {
    let deadline = DispatchTime.now() + reliabilityHangGuard
    while !condition() {
        meanwhile()
        if DispatchTime.now() > deadline {
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
            return
        }
        // Sleeping rather than spinning leaves the two cores to the threads being waited for.
        usleep(200)
    }
}

/// The operations each stress thread runs: 100,000 unless `FLOW_STRESS_OPERATIONS` says otherwise.
let stressOperationsPerThread: Int = {
    ProcessInfo.processInfo.environment["FLOW_STRESS_OPERATIONS"].flatMap(Int.init) ?? 100_000
}()

let stressThreadCount = 8

struct StressError: Error, Equatable {
    let code: Int
}

/// Races `thread` on ``stressThreadCount`` threads, each with a generator seeded from `seed` and its
/// index, a mailbox of its own and its neighbour's (to post work to). `thread` returns how many
/// operations it made. Each thread then drains its mailbox until every thread is done (neighbours
/// may still post to it); once `places` have drained, `ledger` must be clean and have counted every
/// operation.
func raceWithMailboxes(
    _ what: String, seed: UInt64, places: StressPlaces, ledger: StressLedger,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ thread: @escaping @Sendable (
        _ index: Int, _ random: inout SplitMix64, _ ownMailbox: Mailbox, _ neighbourMailbox: Mailbox
    ) -> Int
) {
    let mailboxes = (0..<stressThreadCount).map { _ in Mailbox() }
    let finishedThreads = AtomicCounter()
    runOnThreads(stressThreadCount) { index in
        var random = SplitMix64(state: UInt64(index) &+ seed)
        let ownMailbox = mailboxes[index]
        let operations = thread(index, &random, ownMailbox, mailboxes[(index + 1) % stressThreadCount])
        ledger.count(operations)
        finishedThreads.increment()
        waitUntil("every stress thread to finish", meanwhile: ownMailbox.drain) {
            finishedThreads.current == stressThreadCount
        }
    }
    places.drain()
    ledger.expectClean(what, sourceLocation: sourceLocation)
    #expect(ledger.operations.load(ordering: .acquiring) >= stressThreadCount * stressOperationsPerThread,
            sourceLocation: sourceLocation)
}
