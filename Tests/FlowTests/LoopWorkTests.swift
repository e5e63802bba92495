import Dispatch
@testable import Flow
import FlowTestSupport
import Synchronization
import Testing

/// The loop's job: a closure or a Concurrency job in two words, moved in and out with its ownership.
// Serialized: two tests count live `Tracked` objects in one static counter, each from zero.
@Suite("EventLoop.LoopWork: the loop's two-word job", .serialized)
struct LoopWorkTests {
    /// Counts live instances, to see that a job's closure is released exactly once.
    final class Tracked: Sendable {
        static let live = Atomic<Int>(0)
        init() { Tracked.live.add(1, ordering: .relaxed) }
        deinit { Tracked.live.subtract(1, ordering: .relaxed) }
        func touch() {}
    }

    /// Runs of the capture-free closure below.
    static let captureFreeRuns = Atomic<Int>(0)

    @Test("a job takes two words: a million queued fill 16 MB, like libuv's function and argument")
    func jobIsTwoWords() {
        #expect(MemoryLayout<EventLoop.LoopWork>.size == 16)
        #expect(MemoryLayout<EventLoop.LoopWork>.stride == 16)
        // What the encoding relies on: a closure is its function word and its context word, the
        // function word never zero (an optional closure needs no third word), and a job one word.
        #expect(MemoryLayout<EventLoop.LoopWork.Body>.size == 16)
        #expect(MemoryLayout<EventLoop.LoopWork.Body?>.size == 16)
        #expect(MemoryLayout<UnownedJob>.size == MemoryLayout<UInt>.size)
        let captureFree: EventLoop.LoopWork.Body = {}
        #expect(unsafeBitCast(captureFree, to: (function: UInt, context: UInt).self).function != 0)
    }

    @Test("a closure job runs once and releases what it captured; one dropped unrun releases it too")
    func closureRunsOnceAndIsReleased() {
        Tracked.live.store(0, ordering: .relaxed)
        let loop = EventLoop(name: "test.loopWork")
        defer { try? loop.close() }
        let runs = Atomic<Int>(0)
        do {
            let tracked = Tracked()
            let work = EventLoop.LoopWork.closure { [tracked] in
                tracked.touch()
                runs.add(1, ordering: .relaxed)
            }
            #expect(Tracked.live.load(ordering: .relaxed) == 1)
            work.run(on: loop)
        }
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(Tracked.live.load(ordering: .relaxed) == 0)
        do {
            let tracked = Tracked()
            _ = EventLoop.LoopWork.closure { [tracked] in tracked.touch() }
        }
        #expect(Tracked.live.load(ordering: .relaxed) == 0)
        // A closure without captures has no context word: it still runs, and nothing is released.
        LoopWorkTests.captureFreeRuns.store(0, ordering: .relaxed)
        EventLoop.LoopWork.closure { LoopWorkTests.captureFreeRuns.add(1, ordering: .relaxed) }.run(on: loop)
        _ = EventLoop.LoopWork.closure { LoopWorkTests.captureFreeRuns.add(1, ordering: .relaxed) }
        #expect(LoopWorkTests.captureFreeRuns.load(ordering: .relaxed) == 1)
    }

    @Test("work submitted to a closed loop is released, not run; work left queued at close runs once")
    func closedLoopReleasesRefusedWork() throws {
        Tracked.live.store(0, ordering: .relaxed)
        let loop = EventLoop(name: "test.loopWork.closed")
        let runs = Atomic<Int>(0)
        do {
            let tracked = Tracked()
            for _ in 0..<100 {
                loop.execute { [tracked] in
                    tracked.touch()
                    runs.add(1, ordering: .relaxed)
                }
            }
        }
        try loop.close()
        #expect(runs.load(ordering: .relaxed) == 100)
        #expect(Tracked.live.load(ordering: .relaxed) == 0)
        do {
            let tracked = Tracked()
            #expect(throws: EventLoopError.closed) {
                try loop.submit { [tracked] in
                    tracked.touch()
                    runs.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(runs.load(ordering: .relaxed) == 100)
        #expect(Tracked.live.load(ordering: .relaxed) == 0)
    }

    @Test("closures and Concurrency jobs queued on the loop run in the order queued, jobs on the loop")
    func closuresAndJobsKeepTheirOrder() async {
        let loop = EventLoop.startOnNewThread(name: "test.loopWork.order")
        defer { loop.shutdown() }
        let events = Shared<[String]>([])
        await Task(executorPreference: loop) {
            for index in 0..<50 {
                loop.execute { events.mutate { $0.append("closure \(index)") } }
                // The task's next job is queued on the loop behind the closure.
                await Task.yield()
                let onLoop = loop.isInLoopContext
                events.mutate { $0.append("job \(index)\(onLoop ? "" : " off the loop")") }
            }
        }.value
        let expected = (0..<50).flatMap { ["closure \($0)", "job \($0)"] }
        #expect(events.value == expected)
    }
}
