import Dispatch
import Testing

@testable import Flow

/// `Locked`, the box that owns a state and the mutex guarding it.
@Suite("Locked")
struct LockedTests {
    @Test("copies of a Locked share one state; withLock returns what its body returns")
    func copiesShareTheState() {
        let first = Locked([Int]())
        let second = first
        second.withLock { $0.append(1) }
        let count = first.withLock { state -> Int in
            state.append(2)
            return state.count
        }
        #expect(count == 2)
        #expect(second.withLock { $0 } == [1, 2])
    }

    @Test("withLock rethrows its body's error and leaves the lock free")
    func throwingBodyReleasesTheLock() {
        struct Refused: Error {}
        let state = Locked(0)
        #expect(throws: Refused.self) {
            try state.withLock { _ throws(Refused) in throw Refused() }
        }
        #expect(state.withLock { value -> Int in
            value += 1
            return value
        } == 1)
    }

    @Test("a non-copyable state is moved in, changed in place between lock() and unlock(), and destroyed with the box")
    func nonCopyableStateIsDestroyedWithTheBox() {
        let destroyed = Locked(0)
        do {
            let box = Locked(DestroyCounted(counter: destroyed))
            box.lock()
            box.lockedState.value += 41
            box.unlock()
            #expect(box.withLock { $0.value } == 42)
            #expect(destroyed.withLock { $0 } == 0)
        }
        #expect(destroyed.withLock { $0 } == 1)
    }

    @Test("increments from eight threads at once are none of them lost")
    func concurrentIncrementsAreNotLost() {
        let counter = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { counter.withLock { $0 += 1 } }
        }
        #expect(counter.withLock { $0 } == 80_000)
    }
}

/// A non-copyable value that counts its destruction.
private struct DestroyCounted: ~Copyable {
    let counter: Locked<Int>
    var value = 1

    deinit { counter.withLock { $0 += 1 } }
}
