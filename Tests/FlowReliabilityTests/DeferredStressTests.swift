import Deferred
import Dispatch
import Flow
import Synchronization
import Testing

@Suite("Stress: eight threads racing Deferred fills and upons", .serialized)
struct DeferredStressTests {
    /// A Deferred of a batch, its racing fills and the closures waiting for it.
    private struct RacedDeferred {
        let deferred: Deferred<Int>
        let wins: AtomicCounter
        let attempts: AtomicCounter
        let expectedAttempts: Int
        let readers: [Probe]
    }

    @Test("Deferreds filled and upon'd from 8 threads: exactly one fill wins, every upon runs once on its executor with that value")
    func deferredsRacedFromEightThreads() {
        let places = StressPlaces()
        defer { places.shutdown() }
        let ledger = StressLedger()
        raceWithMailboxes("Deferred", seed: 0xDEFE, places: places, ledger: ledger) {
            index, random, ownMailbox, neighbourMailbox in
            var operations = 0
            while operations < stressOperationsPerThread {
                var batch: [RacedDeferred] = []
                batch.reserveCapacity(256)
                for position in 0..<256 {
                    let deferred = Deferred<Int>()
                    let wins = AtomicCounter()
                    let attempts = AtomicCounter()
                    let fill: @Sendable (Int) -> Void = { value in
                        if deferred.fill(with: value) { wins.increment() }
                        attempts.increment()
                    }
                    var readers: [Probe] = []
                    for _ in 0..<(1 + Int(random.next() % 2)) {
                        let place = [Place.loopA, .loopB, .queue].randomElement(using: &random)!
                        let reader = Probe(place)
                        let body: @Sendable (Int) -> Void = { value in
                            reader.hit(places, ledger)
                            if deferred.peek() != value { ledger.wrongValue.add(1, ordering: .relaxed) }
                        }
                        switch place {
                        case .loopA: deferred.upon(places.loopA.scheduler, execute: body)   // Scheduler as Executor
                        case .loopB: deferred.upon(places.loopB, execute: body)             // EventLoop as Executor
                        default: deferred.upon(places.dispatchQueue, execute: body)         // DispatchQueue
                        }
                        readers.append(reader)
                    }
                    // Two or three fills race: the neighbour thread's, a loop's or the queue's, and this thread's.
                    neighbourMailbox.post { fill(position * 3) }
                    var expectedAttempts = 2
                    switch random.next() % 3 {
                    case 0:
                        places.loopA.execute { fill(position * 3 + 1) }
                        expectedAttempts += 1
                    case 1:
                        places.dispatchQueue.async { fill(position * 3 + 1) }
                        expectedAttempts += 1
                    default:
                        break
                    }
                    fill(position * 3 + 2)
                    operations += 1 + readers.count + expectedAttempts
                    batch.append(RacedDeferred(
                        deferred: deferred, wins: wins, attempts: attempts, expectedAttempts: expectedAttempts,
                        readers: readers))
                    if position % 16 == 0 { ownMailbox.drain() }
                }
                waitUntil("a batch of Deferreds to be filled and read", meanwhile: ownMailbox.drain) {
                    batch.allSatisfy { raced in
                        raced.attempts.current == raced.expectedAttempts && raced.readers.allSatisfy { $0.runCount >= 1 }
                    }
                }
                for raced in batch where raced.wins.current != 1 || raced.readers.contains(where: { $0.runCount != 1 }) {
                    ledger.missing.add(1, ordering: .relaxed)
                }
            }
            return operations
        }
    }
}
