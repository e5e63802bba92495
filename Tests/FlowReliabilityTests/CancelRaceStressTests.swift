import Dispatch
import Flow
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `f.onValue { save() }.onCancel { undo() }` with `f` completed on one thread while the end of the
/// chain is cancelled on another, chain after chain in lockstep: the rule the Cancellation article
/// states (a step whose callback has started runs to its end; the futures after it may still be
/// cancelled, and their `onCancel` runs) and its corollary (cancelled on the scheduler the steps run
/// on, exactly one of the two runs). Run under ThreadSanitizer by `Scripts/sanitizers`.
@Suite("Stress: a cancel racing a completion along a chain", .serialized)
struct CancelRaceStressTests {
    /// Chains raced per test: a fifth of the operations per stress thread (20,000 in the plain run,
    /// 10,000 under ThreadSanitizer).
    private static let chainCount = max(1_000, stressOperationsPerThread / 5)

    /// One raced chain: `promise.future.onValue { save }.onCancel { undo }`, and what ran.
    private final class RacedChain: Sendable {
        let promise = Promise<Int>()
        let saves = AtomicCounter()
        let undos = AtomicCounter()
        let tail: Future<Int>

        init(on scheduler: Scheduler) {
            let saves = self.saves
            let undos = self.undos
            tail = promise.future
                .onValue(on: scheduler) { _ in saves.increment() }
                .onCancel(on: scheduler) { undos.increment() }
        }

        var saved: Int { saves.current }
        var undone: Int { undos.current }
    }

    /// Two threads meeting before each chain: one completes its `f`, the other cancels its tail.
    private static func race(_ chains: [RacedChain], cancel: @escaping @Sendable (RacedChain) -> Void) {
        let arrivals = AtomicCounter()
        runOnThreads(2) { index in
            for (position, chain) in chains.enumerated() {
                arrivals.increment()
                while arrivals.current < 2 * (position + 1) { sched_yield() }
                if index == 0 {
                    chain.promise.succeed(position)
                } else {
                    cancel(chain)
                }
            }
        }
    }

    @Test("cancelled from another thread while f completes, each future ends one way, and onCancel runs exactly when the tail was cancelled")
    func cancelFromAnotherThread() {
        // On `.none`, `save` runs on the completing thread, where the cancel can catch it running.
        let chains = (0..<Self.chainCount).map { _ in RacedChain(on: .none) }
        Self.race(chains) { chain in chain.tail.cancel() }
        var both = 0
        for chain in chains {
            let (saved, undone) = (chain.saved, chain.undone)
            #expect(saved <= 1 && undone <= 1, "a callback ran twice")
            #expect(saved + undone >= 1, "neither the value nor the cancel reached the chain")
            guard let result = chain.tail.result else {
                Issue.record("the tail of a chain never completed")
                continue
            }
            if result.value != nil {
                #expect(saved == 1 && undone == 0, "the tail got the value, yet save did not run or undo ran")
            } else {
                #expect(result.error as? FutureError == .aborted)
                #expect(undone == 1, "the tail was cancelled without running onCancel")
            }
            if saved == 1 && undone == 1 { both += 1 }
        }
        // Both run only when the cancel arrived while `save` was running: allowed, and rarer than not.
        #expect(both < chains.count)
    }

    @Test("cancelled on the loop that runs the steps while f completes on another thread, exactly one of onValue and onCancel runs")
    func cancelOnTheStepsLoop() {
        withLoopOnOwnThread(name: "test.cancel-race") { loop in
            let scheduler = loop.scheduler
            let chains = scheduler.sync { (0..<Self.chainCount).map { _ in RacedChain(on: scheduler) } }
            Self.race(chains) { chain in loop.execute { chain.tail.cancel() } }
            // Every step and every cancel was submitted to the loop before this.
            scheduler.sync {}
            for chain in chains {
                #expect(chain.saved + chain.undone == 1, "saved \(chain.saved), undone \(chain.undone)")
                #expect(chain.tail.isCompleted)
            }
        }
    }
}
