import Dispatch
import Flow
import Synchronization
import Testing

/// Eight threads (real threads, more than the machine's cores) race each other and the loops, each
/// running `stressOperationsPerThread` operations; every callback is checked to run exactly once, on
/// the scheduler it asked for, with the right value. Run under ThreadSanitizer by `Scripts/sanitizers`.
///
/// An operation is one call into the library: creating, completing, observing, transforming or
/// cancelling a future, filling or `upon`ing a Deferred, submitting work to a loop or a queue.
@Suite("Stress: eight threads racing futures, loops and queues", .serialized)
struct StressTests {
    /// One future of a batch and what must hold once it settled.
    private struct RacedFuture {
        let leaf: Future<Int>
        let value: Int
        let mapper: Probe
        let observer: Probe
        let directObserver: Probe?
        let isCancelled: Bool
    }

    @Test("futures completed, observed and cancelled from 8 threads run each callback once, on its scheduler")
    func futuresRacedFromEightThreads() {
        let places = StressPlaces()
        defer { places.shutdown() }
        let ledger = StressLedger()
        raceWithMailboxes("futures", seed: 0x5EED, places: places, ledger: ledger) {
            index, random, ownMailbox, neighbourMailbox in
            var operations = 0
            var batchNumber = 0
            while operations < stressOperationsPerThread {
                var batch: [RacedFuture] = []
                batch.reserveCapacity(256)
                for position in 0..<256 {
                    let value = (index << 40) | (batchNumber << 10) | position
                    let promise = Promise<Int>()
                    let mapper = Probe(Place.allCases.randomElement(using: &random)!)
                    let observer = Probe(Place.allCases.randomElement(using: &random)!)
                    let leaf = promise.future
                        .map(on: places.scheduler(mapper.place)) { received -> Int in
                            mapper.hit(places, ledger)
                            return received + 1
                        }
                        .onResult(on: places.scheduler(observer.place)) { result in
                            observer.hit(places, ledger)
                            if let received = result.value, received != value + 1 {
                                ledger.wrongValue.add(1, ordering: .relaxed)
                            }
                        }
                    operations += 3
                    var directObserver: Probe?
                    if random.next() % 4 == 0 {
                        // A second continuation on the root: it keeps the root alive through a cancel.
                        let direct = Probe(Place.allCases.randomElement(using: &random)!)
                        promise.future.onValue(on: places.scheduler(direct.place)) { received in
                            direct.hit(places, ledger)
                            if received != value { ledger.wrongValue.add(1, ordering: .relaxed) }
                        }
                        directObserver = direct
                        operations += 1
                    }
                    // The completion races the observers and the cancel from another thread, a loop or a
                    // queue, or comes from this thread.
                    switch random.next() % 4 {
                    case 0: places.loopA.execute { promise.succeed(value) }
                    case 1: places.dispatchQueue.async { promise.succeed(value) }
                    case 2: neighbourMailbox.post { promise.succeed(value) }
                    default: promise.succeed(value)
                    }
                    operations += 1
                    let isCancelled = random.next() % 4 == 0
                    if isCancelled {
                        leaf.cancel()
                        operations += 1
                    }
                    batch.append(RacedFuture(
                        leaf: leaf, value: value, mapper: mapper, observer: observer,
                        directObserver: directObserver, isCancelled: isCancelled))
                    if position % 16 == 0 { ownMailbox.drain() }
                }
                waitUntil("a batch of raced futures to complete", meanwhile: ownMailbox.drain) {
                    batch.allSatisfy { $0.leaf.isCompleted && ($0.directObserver?.runCount ?? 1) >= 1 }
                }
                for raced in batch {
                    StressTests.check(raced, ledger)
                }
                batchNumber += 1
            }
            return operations
        }
    }

    private static func check(_ raced: RacedFuture, _ ledger: StressLedger) {
        switch raced.leaf.result {
        case .success:
            // Completed normally: the map and the observer each ran exactly once.
            if raced.mapper.runCount != 1 || raced.observer.runCount != 1 {
                ledger.missing.add(1, ordering: .relaxed)
            }
        case .failure(let error):
            // Only a cancel may end a chain whose root succeeds, and then nothing ran twice.
            if !raced.isCancelled || (error as? FutureError) != .aborted {
                ledger.missing.add(1, ordering: .relaxed)
            }
        case nil:
            ledger.missing.add(1, ordering: .relaxed)
        }
        if let direct = raced.directObserver, direct.runCount != 1 {
            ledger.missing.add(1, ordering: .relaxed)
        }
    }

    @Test("repeating futures run and cancelled from 8 threads retry exactly as told and report once")
    func repetitionsRacedFromEightThreads() {
        let places = StressPlaces()
        defer { places.shutdown() }
        let ledger = StressLedger()

        runOnThreads(stressThreadCount) { index in
            var random = SplitMix64(state: UInt64(index) &+ 0xBEEF)
            var operations = 0
            while operations < stressOperationsPerThread {
                var batch: [(leaf: Future<Int>, attempts: AtomicCounter, observer: Probe, isCancelled: Bool)] = []
                for position in 0..<128 {
                    let value = index * 1_000_000 + position
                    let attempts = AtomicCounter()
                    let completer = random.next() % 3
                    let operation = Future<Int>(on: places.scheduler(Place.allCases.randomElement(using: &random)!)) { completion in
                        let attempt = attempts.increment()
                        let result: Result<Int> = attempt < 3 ? .failure(StressError(code: attempt)) : .success(value)
                        switch completer {
                        case 0: places.loopB.execute { completion(result) }
                        case 1: places.dispatchQueue.async { completion(result) }
                        default: completion(result)
                        }
                        return NilDisposer()
                    }
                    let observer = Probe(Place.allCases.randomElement(using: &random)!)
                    let leaf = operation
                        .onErrorRepeat(maxRepetitions: 3)
                        .onResult(on: places.scheduler(observer.place)) { result in
                            observer.hit(places, ledger)
                            if let received = result.value, received != value {
                                ledger.wrongValue.add(1, ordering: .relaxed)
                            }
                        }
                    let isCancelled = random.next() % 5 == 0
                    if isCancelled { leaf.cancel() }
                    operations += isCancelled ? 4 : 3
                    batch.append((leaf, attempts, observer, isCancelled))
                }
                waitUntil("a batch of repeating futures to complete") { batch.allSatisfy { $0.leaf.isCompleted } }
                for entry in batch {
                    // Each execution of the operation is an operation too.
                    operations += entry.attempts.current
                    switch entry.leaf.result {
                    case .success:
                        if entry.attempts.current != 3 || entry.observer.runCount != 1 {
                            ledger.missing.add(1, ordering: .relaxed)
                        }
                    case .failure(let error):
                        if !entry.isCancelled || (error as? FutureError) != .aborted || entry.attempts.current > 3 {
                            ledger.missing.add(1, ordering: .relaxed)
                        }
                    case nil:
                        ledger.missing.add(1, ordering: .relaxed)
                    }
                }
            }
            ledger.count(operations)
        }
        places.drain()
        ledger.expectClean("repetitions")
        #expect(ledger.operations.load(ordering: .acquiring) >= stressThreadCount * stressOperationsPerThread)
    }

    @Test("work submitted to loops from 8 threads runs once each, on its loop, in each thread's order; timers disposed never fire")
    func loopSubmissionsFromEightThreads() {
        let places = StressPlaces()
        defer { places.shutdown() }
        let ledger = StressLedger()
        // Per loop, the last sequence number each thread's work saw: touched only on that loop.
        let lastSeenOnA = Guarded([Int](repeating: -1, count: stressThreadCount))
        let lastSeenOnB = Guarded([Int](repeating: -1, count: stressThreadCount))
        let outOfOrder = AtomicCounter()

        runOnThreads(stressThreadCount) { index in
            var random = SplitMix64(state: UInt64(index) &+ 0xF00D)
            var operations = 0
            var sequenceA = 0
            var sequenceB = 0
            var probes: [Probe] = []
            var timers: [(probe: Probe, isDisposed: Bool)] = []
            while operations < stressOperationsPerThread {
                switch random.next() % 16 {
                case 0:
                    // A deadline; half of them far away and disposed at once: those must never run.
                    let probe = Probe(.loopB)
                    let isDisposed = random.next() % 2 == 0
                    let timer = places.loopB.execute(after: isDisposed ? 3600 : 0.0001) { probe.hit(places, ledger) }
                    if isDisposed { timer.dispose() }
                    timers.append((probe, isDisposed))
                    operations += isDisposed ? 2 : 1
                case 1...7:
                    let sequence = sequenceB
                    sequenceB += 1
                    let probe = Probe(.loopB)
                    places.loopB.execute {
                        probe.hit(places, ledger)
                        lastSeenOnB.withLock { lastSeen in
                            if lastSeen[index] != sequence - 1 { outOfOrder.increment() }
                            lastSeen[index] = sequence
                        }
                    }
                    probes.append(probe)
                    operations += 1
                default:
                    let sequence = sequenceA
                    sequenceA += 1
                    let probe = Probe(.loopA)
                    places.loopA.scheduler.async {
                        probe.hit(places, ledger)
                        lastSeenOnA.withLock { lastSeen in
                            if lastSeen[index] != sequence - 1 { outOfOrder.increment() }
                            lastSeen[index] = sequence
                        }
                    }
                    probes.append(probe)
                    operations += 1
                }
                if probes.count >= 4096 {
                    waitUntil("submitted work to run") { probes.allSatisfy { $0.runCount >= 1 } }
                    probes.removeAll(keepingCapacity: true)
                }
            }
            waitUntil("submitted work and timers to run") {
                probes.allSatisfy { $0.runCount >= 1 } && timers.allSatisfy { $0.isDisposed || $0.probe.runCount >= 1 }
            }
            ledger.count(operations)
            // Disposed timers are checked after the loops drained below.
            let disposed = timers.filter(\.isDisposed).map(\.probe)
            firedAfterDispose.withLock { $0.append(contentsOf: disposed) }
        }
        places.drain()
        let disposedThatRan = firedAfterDispose.withLock { probes in
            let count = probes.filter { $0.runCount > 0 }.count
            probes = []
            return count
        }
        #expect(disposedThatRan == 0, "timers disposed before their deadline still ran")
        #expect(outOfOrder.current == 0, "work from one thread ran out of submission order")
        ledger.expectClean("loop submissions")
        #expect(ledger.operations.load(ordering: .acquiring) >= stressThreadCount * stressOperationsPerThread)
    }

    @Test("operations enqueued on a FutureQueue from 8 threads run at most 2 at a time, on its scheduler, and each result arrives once")
    func futureQueueFromEightThreads() {
        let places = StressPlaces()
        defer { places.shutdown() }
        let ledger = StressLedger()
        let queue = FutureQueue(maxConcurrentCount: 2, executeOn: places.loopA.scheduler)
        let running = AtomicCounter()
        let tooMany = AtomicCounter()
        let wrongStart = AtomicCounter()

        runOnThreads(stressThreadCount) { index in
            var random = SplitMix64(state: UInt64(index) &+ 0xCAFE)
            var operations = 0
            while operations < stressOperationsPerThread {
                var batch: [(result: Future<Int>, observer: Probe, isCancelled: Bool)] = []
                for position in 0..<256 {
                    let value = index * 1_000_000 + position
                    let finishesLater = random.next() % 2 == 0
                    let result = queue.enqueue { () -> Future<Int> in
                        if !places.isCurrent(.loopA) { wrongStart.increment() }
                        if running.increment() > 2 { tooMany.increment() }
                        guard finishesLater else {
                            running.value.subtract(1, ordering: .acquiringAndReleasing)
                            return Future(value)
                        }
                        // The operation holds its slot until it completes or is cancelled: leave it
                        // exactly once, on whichever comes first. (Cancelled, the queue frees the slot
                        // at once, although the work it had handed to another scheduler may still run.)
                        return Future { completion in
                            let leave = Disposer { running.value.subtract(1, ordering: .acquiringAndReleasing) }
                            places.queueScheduler.async {
                                leave.dispose()
                                completion(.success(value))
                            }
                            return leave
                        }
                    }
                    let observer = Probe(Place.allCases.randomElement(using: &random)!)
                    let observed = result.onValue(on: places.scheduler(observer.place)) { received in
                        observer.hit(places, ledger)
                        if received != value { ledger.wrongValue.add(1, ordering: .relaxed) }
                    }
                    let isCancelled = random.next() % 8 == 0
                    if isCancelled { observed.cancel() }
                    operations += isCancelled ? 4 : 3
                    batch.append((observed, observer, isCancelled))
                }
                waitUntil("a batch of queued operations to complete") { batch.allSatisfy { $0.result.isCompleted } }
                for entry in batch {
                    switch entry.result.result {
                    case .success:
                        if entry.observer.runCount != 1 { ledger.missing.add(1, ordering: .relaxed) }
                    case .failure:
                        if !entry.isCancelled { ledger.missing.add(1, ordering: .relaxed) }
                    case nil:
                        ledger.missing.add(1, ordering: .relaxed)
                    }
                }
            }
            ledger.count(operations)
        }
        places.drain()
        #expect(tooMany.current == 0, "more than maxConcurrentCount operations ran at once")
        #expect(wrongStart.current == 0, "operations started off the queue's scheduler")
        ledger.expectClean("FutureQueue")
        #expect(ledger.operations.load(ordering: .acquiring) >= stressThreadCount * stressOperationsPerThread)
    }
}

/// The probes of timers disposed before they fired, collected from every thread.
private let firedAfterDispose = Guarded<[Probe]>([])
