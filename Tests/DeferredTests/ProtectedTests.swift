import Deferred
import Dispatch
import Testing

@Suite("Protected and locks")
struct ProtectedTests {
    @Test("Protected serialises concurrent writes", arguments: [LockKind.native, .readWrite])
    func concurrentWrites(kind: LockKind) {
        let counter = Protected(initialValue: 0, lock: kind.makeLock())
        DispatchQueue.concurrentPerform(iterations: 10_000) { _ in
            counter.withWriteLock { $0 += 1 }
        }
        #expect(counter.withReadLock { $0 } == 10_000)
    }

    @Test("withAttemptedReadLock reads a free lock and gives nil while a writer holds it")
    func attemptedRead() {
        for kind in [LockKind.native, .readWrite] {
            let lock = kind.makeLock()
            #expect(lock.withAttemptedReadLock { 1 } == 1)
            let whileWriting = lock.withWriteLock { lock.withAttemptedReadLock { 1 } }
            #expect(whileWriting == nil)
        }
    }

    @Test("a readers-writer lock lets readers in together")
    func readersTogether() {
        let lock = POSIXReadWriteLock()
        let nested = lock.withReadLock { lock.withAttemptedReadLock { true } }
        #expect(nested == true)
    }

    @Test("Protected describes its value for debugging")
    func debugDescription() {
        #expect(Protected(initialValue: [1]).debugDescription == "Protected([1])")
    }

    enum LockKind: Sendable, CustomTestStringConvertible {
        case native
        case readWrite

        func makeLock() -> any Locking {
            switch self {
            case .native: return NativeLock()
            case .readWrite: return POSIXReadWriteLock()
            }
        }

        var testDescription: String { self == .native ? "NativeLock" : "POSIXReadWriteLock" }
    }
}
