import Flow
import FlowNIO
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

@Suite("FlowNIO: a SwiftNIO loop as a Flow scheduler", .checksLiveFutures)
struct NIOSchedulerTests {
    @Test func schedulersForTheSameLoopAreEqual() async throws {
        try await withLoopGroup { group async throws in
            let loops = Array(group.makeIterator())
            #expect(Scheduler(eventLoop: loops[0]) == loops[0].flowScheduler)
            #expect(Scheduler(eventLoop: loops[0]) != Scheduler(eventLoop: loops[1]))
        }
    }

    @Test func onTheLoopsThreadItIsTheCurrentAndImmediateScheduler() async throws {
        try await withLoopGroup { group async throws in
            let loop = group.next()
            let answers = try await loop.submit { () -> [Bool] in
                let scheduler = Scheduler(eventLoop: loop)
                return [Scheduler.current == scheduler, scheduler.isImmediate, scheduler.isExecuting]
            }.get()
            #expect(answers == [true, true, true])
        }
    }

    @Test func aCallbackRegisteredInANIOHandlerRunsOnItsLoopWithNoHop() async throws {
        // What the documentation asks a program to do at startup. Without it, this test passed only
        // when another test in the process had already used the bridge (which installs it), and
        // failed when it ran first: `.current` on a NIO thread is the loop only once installed.
        FlowNIOBridge.install()
        try await withLoopGroup { group async throws in
            let loop = group.next()
            let observations = try await loop.submit { () -> [Bool] in
                // As a channel handler would: no scheduler named, so `.current`.
                let ran = Shared(false)
                Flow.Future(1).map { $0 + 1 }.onValue { _ in ran.set(loop.inEventLoop) }
                let ranAtOnce = ran.value

                let promise = loop.makePromise(of: Int.self)
                let completedInTurn = Shared(false)
                promise.futureResult.flowFuture().onValue { _ in completedInTurn.set(loop.inEventLoop) }
                promise.succeed(3)
                return [ranAtOnce, completedInTurn.value]
            }.get()
            #expect(observations == [true, true])
        }
    }

    @Test func workSentFromAnotherThreadRunsOnTheLoop() async throws {
        try await withLoopGroup { group async throws in
            let loop = group.next()
            let scheduler = Scheduler(eventLoop: loop)
            let onLoop = Flow.Future<Bool>(on: scheduler) { completion in
                completion(.success(loop.inEventLoop && Scheduler.current == scheduler))
                return NilDisposer()
            }
            #expect(try await onLoop.get())
            #expect(scheduler.sync { loop.inEventLoop })
        }
    }

    @Test func delaysRunOnTheEmbeddedLoopsVirtualClock() {
        let loop = EmbeddedEventLoop()
        let scheduler = Scheduler(eventLoop: loop)
        let fired = Shared(0)
        scheduler.async(after: 2) { fired.set(fired.value + 1) }
        let cancelled = scheduler.async(after: 2) { fired.set(fired.value + 100) }
        cancelled.dispose()
        let start = scheduler.uptimeNanoseconds
        loop.advanceTime(by: .seconds(1))
        #expect(fired.value == 0)
        loop.advanceTime(by: .seconds(1))
        #expect(fired.value == 1)
        #expect(scheduler.uptimeNanoseconds - start == 2_000_000_000)
    }
}

@Suite("FlowNIO: a Flow loop as a SwiftNIO loop", .checksLiveFutures)
struct FlowLoopAsNIOTests {
    @Test func submittedWorkRunsOnTheFlowLoop() async throws {
        try await withFlowLoop { flowLoop async throws in
            let nioLoop = flowLoop.nioEventLoop
            #expect(nioLoop === flowLoop.nioEventLoop)
            #expect(!nioLoop.inEventLoop)
            let where_ = try await nioLoop.submit { [nioLoop.inEventLoop, flowLoop.isInLoopContext] }.get()
            #expect(where_ == [true, true])
        }
    }

    @Test func anAdapterNothingHoldsLetsItsFlowLoopGoAtTheNextLookUp() throws {
        let (releasedLoop, releasedAdapter) = try Self.useAdapterOnce()
        // The table of adapters still holds the unused one (and its loop) until the next look-up.
        let other = Flow.EventLoop(name: "test.adapter-lookup")
        _ = other.nioEventLoop
        #expect(releasedAdapter.object == nil)
        #expect(releasedLoop.object == nil)
        try other.close()
    }

    /// Makes a Flow loop and its adapter, checks that the adapter is the same on a second look-up, closes
    /// the loop and lets both go: returns weak references to them.
    private static func useAdapterOnce() throws -> (loop: WeakReference<Flow.EventLoop>, adapter: WeakReference<FlowNIOEventLoop>) {
        let flowLoop = Flow.EventLoop(name: "test.adapter-released")
        let adapter = flowLoop.nioEventLoop
        let isSame = adapter === flowLoop.nioEventLoop
        #expect(isSame)
        try flowLoop.close()
        return (WeakReference(flowLoop), WeakReference(adapter))
    }

    @Test func promisesCompleteAndCallBackOnTheFlowLoop() async throws {
        try await withFlowLoop { flowLoop async throws in
            let nioLoop = flowLoop.nioEventLoop
            let promise = nioLoop.makePromise(of: Int.self)
            let mapped = promise.futureResult.map { ($0, flowLoop.isInLoopContext) }
            promise.succeed(6)
            let (value, onFlowLoop) = try await mapped.get()
            #expect(value == 6)
            #expect(onFlowLoop)
        }
    }

    @Test func scheduledTasksRunOnTheLoopsTimerAndCanBeCancelled() async throws {
        try await withFlowLoop { flowLoop async throws in
            let nioLoop = flowLoop.nioEventLoop
            let scheduled = nioLoop.scheduleTask(in: .milliseconds(1)) { flowLoop.isInLoopContext }
            #expect(try await scheduled.futureResult.get())

            let cancelled = nioLoop.scheduleTask(in: .seconds(3600)) { true }
            cancelled.cancel()
            await #expect(throws: NIOCore.EventLoopError.cancelled) { try await cancelled.futureResult.get() }
        }
    }

    @Test func shuttingDownThroughNIOIsRefused() async throws {
        try await withFlowLoop { flowLoop async throws in
            await #expect(throws: NIOCore.EventLoopError.unsupportedOperation) {
                try await flowLoop.nioEventLoop.shutdownGracefully()
            }
            #expect(!flowLoop.isClosed)
        }
    }
}

@Suite("FlowNIO: across loops", .checksLiveFutures)
struct AcrossLoopsTests {
    /// A value goes from one NIO loop, through a Flow loop, to another NIO loop, many times at once:
    /// under ThreadSanitizer this is the check that the bridges hand results across threads safely.
    @Test func valuesCrossNIOAndFlowLoopsIntact() async throws {
        try await withLoopGroup { group async throws in
            try await withFlowLoop { flowLoop async throws in
                let loops = Array(group.makeIterator())
                let flowScheduler = flowLoop.scheduler
                let conversions = (0..<200).map { index -> EventLoopFuture<Int> in
                    loops[index % 2].submit { index }
                        .flowFuture()
                        .map(on: flowScheduler) { $0 * 2 }
                        .eventLoopFuture(on: loops[(index + 1) % 2])
                        .flowFuture()
                        .eventLoopFuture(on: flowLoop.nioEventLoop)
                }
                var total = 0
                for conversion in conversions { total += try await conversion.get() }
                #expect(total == (0..<200).reduce(0) { $0 + $1 * 2 })
            }
        }
    }
}

/// A weak reference, to see whether an object was freed.
private struct WeakReference<Object: AnyObject> {
    weak var object: Object?
    init(_ object: Object) { self.object = object }
}
