@testable import Flow
import Testing

/// The ring buffer behind the loop's queues and the per-thread trampoline.
@Suite("WorkQueue: the loops' first-in, first-out ring buffer")
struct WorkQueueTests {
    /// Counts live instances, to see that the queue releases what it holds exactly once.
    final class Tracked {
        nonisolated(unsafe) static var live = 0
        let number: Int
        init(_ number: Int) {
            self.number = number
            Tracked.live += 1
        }
        deinit { Tracked.live -= 1 }
    }

    @Test("random appends and pops come out in order, across growth while the buffer wraps around")
    func matchesAnArrayModel() {
        var generator = SplitMix(seed: 42)
        var queue = WorkQueue<Int>()
        var model: [Int] = []
        var next = 0
        for _ in 0..<20_000 {
            // Bias towards appending in bursts, so that growth happens with `head` in the middle.
            if generator.next() % 5 < 3 {
                for _ in 0..<Int(generator.next() % 7) {
                    queue.append(next)
                    model.append(next)
                    next += 1
                }
            } else {
                for _ in 0..<Int(generator.next() % 5) {
                    let popped = queue.popFirst()
                    #expect(popped == (model.isEmpty ? nil : model.removeFirst()))
                }
            }
            let count = queue.count
            let isEmpty = queue.isEmpty
            #expect(count == model.count)
            #expect(isEmpty == model.isEmpty)
        }
        while let popped = queue.popFirst() {
            #expect(popped == model.removeFirst())
        }
        #expect(model.isEmpty)
    }

    @Test("a popped element is moved out, and elements left in a dropped queue are released once")
    func releasesWhatItHolds() {
        Tracked.live = 0
        do {
            var queue = WorkQueue<Tracked>()
            for number in 0..<40 { queue.append(Tracked(number)) }  // grows twice
            for expected in 0..<25 {
                #expect(queue.popFirst()?.number == expected)
            }
            #expect(Tracked.live == 15)  // the popped ones are gone: the queue kept no copy
            for number in 40..<50 { queue.append(Tracked(number)) }  // wraps around
            #expect(Tracked.live == 25)
        }
        #expect(Tracked.live == 0)
    }

    @Test("takeAll moves every element out and leaves the queue empty and usable")
    func takeAllMovesEverything() {
        var queue = WorkQueue<Int>()
        for number in 0..<20 { queue.append(number) }
        for _ in 0..<5 { _ = queue.popFirst() }
        var taken = queue.takeAll()
        let isEmpty = queue.isEmpty
        #expect(isEmpty)
        queue.append(100)
        #expect(queue.popFirst() == 100)
        var drained: [Int] = []
        while let number = taken.popFirst() { drained.append(number) }
        #expect(drained == Array(5..<20))
        var never = WorkQueue<Int>()
        var empty = never.takeAll()
        #expect(empty.popFirst() == nil)
    }
}

/// A small deterministic generator (SplitMix64), so that a failure reproduces.
private struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
