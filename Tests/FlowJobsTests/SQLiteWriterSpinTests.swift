import Flow
@testable import FlowJobs
import FlowTestSupport
import Foundation
import Synchronization
import Testing

private let job = NewJob(name: "task", queue: "default", payload: Data("{}".utf8), maxAttempts: 1)

@Suite("SQLiteSpinPolicy: spinning pauses when the machine has no core to spare")
struct SQLiteSpinPolicyTests {
    @Test func aSpinMayStartUntilAYieldIsContendedThenPausesForTheShortestPause() {
        var policy = SQLiteSpinPolicy(budgetNanoseconds: 50_000)
        #expect(policy.maySpin(at: 1_000))
        let shortYieldKeepsSpinning = policy.yielded(
            from: 1_000, to: 1_000 + SQLiteSpinPolicy.contentionNanoseconds, awaitedCame: false)
        #expect(shortYieldKeepsSpinning)
        #expect(policy.maySpin(at: 2_000))

        var contendedEnd: UInt64 = 2_000
        for spin in 1...SQLiteSpinPolicy.contendedSpinsBeforePause {
            let start = contendedEnd
            contendedEnd = start + SQLiteSpinPolicy.contentionNanoseconds + 1
            let longYieldKeepsSpinning = policy.yielded(from: start, to: contendedEnd, awaitedCame: false)
            #expect(!longYieldKeepsSpinning)
            // Spins that ended contended pause spinning only once there are several in a row.
            #expect(policy.maySpin(at: contendedEnd) == (spin < SQLiteSpinPolicy.contendedSpinsBeforePause))
        }
        #expect(!policy.maySpin(at: contendedEnd + SQLiteSpinPolicy.initialPauseNanoseconds - 1))
        #expect(policy.maySpin(at: contendedEnd + SQLiteSpinPolicy.initialPauseNanoseconds))
    }

    @Test func eachContendedSpinDoublesThePauseUpToItsMaximumAndAnUncontendedSpinResetsIt() {
        var policy = SQLiteSpinPolicy(budgetNanoseconds: 50_000)
        var now: UInt64 = 0
        var pauses: [UInt64] = []
        for _ in 0..<12 {
            var after = now
            for _ in 1...SQLiteSpinPolicy.contendedSpinsBeforePause {
                let start = after
                after = start + SQLiteSpinPolicy.contentionNanoseconds + 1
                let keepsSpinning = policy.yielded(from: start, to: after, awaitedCame: false)
                #expect(!keepsSpinning)
            }
            pauses.append(policy.pausedUntil - after)
            now = policy.pausedUntil
        }
        #expect(pauses.first == SQLiteSpinPolicy.initialPauseNanoseconds)
        #expect(pauses[1] == 2 * SQLiteSpinPolicy.initialPauseNanoseconds)
        #expect(pauses.last == SQLiteSpinPolicy.maximumPauseNanoseconds)

        policy.spinEndedUncontended()
        var after = now
        for _ in 1...SQLiteSpinPolicy.contendedSpinsBeforePause {
            let start = after
            after = start + SQLiteSpinPolicy.contentionNanoseconds + 1
            _ = policy.yielded(from: start, to: after, awaitedCame: false)
        }
        #expect(policy.pausedUntil == after + SQLiteSpinPolicy.initialPauseNanoseconds)
    }

    @Test func anUncontendedSpinBetweenContendedOnesStartsTheCountAgain() {
        var policy = SQLiteSpinPolicy(budgetNanoseconds: 50_000)
        var now: UInt64 = 1_000
        for _ in 0..<(3 * SQLiteSpinPolicy.contendedSpinsBeforePause) {
            for _ in 1..<SQLiteSpinPolicy.contendedSpinsBeforePause {
                let after = now + SQLiteSpinPolicy.contentionNanoseconds + 1
                let keepsSpinning = policy.yielded(from: now, to: after, awaitedCame: false)
                #expect(!keepsSpinning)
                now = after
            }
            policy.spinEndedUncontended()
        }
        #expect(policy.maySpin(at: now))
    }

    @Test func aLongYieldAfterWhichTheAwaitedWorkCameIsNoContentionUnlessItTookATimeSlice() {
        var policy = SQLiteSpinPolicy(budgetNanoseconds: 50_000)
        var now: UInt64 = 1_000
        // The thread the yield ran handed the work over: as many times as it takes, no pause.
        for _ in 0..<(2 * SQLiteSpinPolicy.contendedSpinsBeforePause) {
            let after = now + SQLiteSpinPolicy.timeSliceNanoseconds
            let keepsSpinning = policy.yielded(from: now, to: after, awaitedCame: true)
            #expect(keepsSpinning)
            now = after
        }
        #expect(policy.maySpin(at: now))
        // A yield that took longer than a time slice ran some other thread, whatever came meanwhile.
        for _ in 1...SQLiteSpinPolicy.contendedSpinsBeforePause {
            let after = now + SQLiteSpinPolicy.timeSliceNanoseconds + 1
            let keepsSpinning = policy.yielded(from: now, to: after, awaitedCame: true)
            #expect(!keepsSpinning)
            now = after
        }
        #expect(!policy.maySpin(at: now))
    }

    @Test func aZeroBudgetNeverSpins() {
        #expect(!SQLiteSpinPolicy(budgetNanoseconds: 0).maySpin(at: 1_000_000_000))
    }
}

@Suite("SQLiteWriter: a caller that awaits each request, with the writer and its loop polling")
struct SQLiteWriterSpinTests {
    @Test func enqueuesAwaitedOneByOneFromALoopAllCommitInOrderAndTheLoopThenReturns() throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        let loop = EventLoop(name: "spin-test")
        defer { try? loop.close() }
        let ids = Mutex<[JobID]>([])
        // Results come from the writer's thread, which does not hold the loop: the token does, until
        // the last result.
        let keepAlive = loop.keepAlive()
        // Each enqueue is made on the loop once the one before it committed: the loop polls for its
        // results, and the writer looks for the next request before it sleeps.
        @Sendable func enqueueNext(_ remaining: Int) {
            guard remaining > 0 else { return keepAlive.dispose() }
            store.enqueue([job]).onValue(on: loop.scheduler) { enqueued in
                ids.withLock { $0.append(contentsOf: enqueued.map(\.id)) }
                enqueueNext(remaining - 1)
            }
        }
        loop.execute { enqueueNext(200) }
        // Returns once nothing is left: the polling ends with the last result.
        try loop.run()
        let committed = ids.withLock { $0 }
        #expect(committed.count == 200)
        #expect(committed == committed.sorted())
        #expect(try loop.run(until: store.counts(queue: nil)).values.reduce(0, +) == 200)
        try loop.run(until: store.close())
    }

    @Test func enqueuesAwaitedOneByOneFromAPlainThreadAllCommit() async throws {
        let directory = TemporaryDirectory()
        let store = try SQLiteJobStore(path: directory.path("jobs.sqlite"))
        for _ in 0..<200 { _ = try await store.enqueue([job]).get() }
        #expect(try await store.counts(queue: nil).get().values.reduce(0, +) == 200)
        try await store.close().get()
    }
}
