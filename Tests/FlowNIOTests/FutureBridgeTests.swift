import Flow
import FlowNIO
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

@Suite("FlowNIO: futures both ways", .checksLiveFutures)
struct FutureBridgeTests {
    @Test func aNIOSuccessIsTheFlowValue() async throws {
        try await withLoopGroup { group async throws in
            let answer = group.next().submit { 42 }.flowFuture()
            #expect(try await answer.get() == 42)
        }
    }

    @Test func aNIOFailureIsTheFlowFailure() async throws {
        try await withLoopGroup { group async throws in
            let failing: EventLoopFuture<Int> = group.next().makeFailedFuture(TestFailure(code: 7))
            await #expect(throws: TestFailure(code: 7)) { try await failing.flowFuture().get() }
        }
    }

    @Test func aFlowValueIsTheNIOSuccessOnTheNIOLoop() async throws {
        try await withLoopGroup { group async throws in
            try await withFlowLoop { flowLoop async throws in
                let nioLoop = group.next()
                let later = Flow.Future<Int>(on: flowLoop.scheduler) { completion in
                    flowLoop.execute { completion(.success(9)) }
                    return NilDisposer()
                }
                let converted = later.eventLoopFuture(on: nioLoop)
                let ranOnNIOLoop = converted.map { _ in nioLoop.inEventLoop }
                #expect(try await converted.get() == 9)
                #expect(try await ranOnNIOLoop.get())
            }
        }
    }

    @Test func aFlowFailureIsTheNIOFailure() async throws {
        try await withLoopGroup { group async throws in
            let failing = Flow.Future<Int>(on: .background) { completion in
                completion(.failure(TestFailure(code: 3)))
                return NilDisposer()
            }
            await #expect(throws: TestFailure(code: 3)) {
                try await failing.eventLoopFuture(on: group.next()).get()
            }
        }
    }

    @Test func aCompletedFlowFutureGivesACompletedNIOFuture() {
        let loop = EmbeddedEventLoop()
        let converted = Flow.Future(5).eventLoopFuture(on: loop)
        // No `run()`: the value is there already.
        let seen = Shared<Int?>(nil)
        converted.whenSuccess { seen.set($0) }
        #expect(seen.value == 5)
    }

    @Test func aCancelledFlowFutureFailsTheNIOFutureWithAborted() async throws {
        try await withLoopGroup { group async throws in
            let cancelled = Flow.Future<Int>(.forever)
            cancelled.cancel()
            await #expect(throws: FutureError.aborted) {
                try await cancelled.eventLoopFuture(on: group.next()).get()
            }
        }
    }

    @Test func aFlowFutureLetGoOfUncompletedFailsTheNIOFutureWithAborted() async throws {
        try await withLoopGroup { group async throws in
            let converted: EventLoopFuture<Int>
            do {
                let never = Flow.Future<Int>(.forever)
                converted = never.eventLoopFuture(on: group.next())
            }
            await #expect(throws: FutureError.aborted) { try await converted.get() }
        }
    }

    @Test func cancellingTheFlowSideFailsTheNIOPromise() async throws {
        try await withLoopGroup { group async throws in
            let handedOut = Shared<EventLoopPromise<Int>?>(nil)
            let response = Flow.Future<Int>(eventLoop: group.next()) { promise in handedOut.set(promise) }
            let promise = try #require(handedOut.value)
            response.cancel()
            #expect(response.result?.error as? FutureError == .aborted)
            await #expect(throws: FutureError.aborted) { try await promise.futureResult.get() }
            // The NIO side completing later changes nothing.
            promise.succeed(1)
            #expect(response.result?.error as? FutureError == .aborted)
        }
    }

    @Test func aPromiseCompletedByNIOCodeCompletesTheFlowFuture() async throws {
        try await withLoopGroup { group async throws in
            let loop = group.next()
            let response = Flow.Future<String>(eventLoop: loop) { promise in
                loop.execute { promise.succeed("pong") }
            }
            #expect(try await response.get() == "pong")
        }
    }

    @Test func anErrorThrownByThePromiseBodyFailsTheFlowFuture() async throws {
        try await withLoopGroup { group async throws in
            let response = Flow.Future<String>(eventLoop: group.next()) { _ in throw TestFailure(code: 11) }
            await #expect(throws: TestFailure(code: 11)) { try await response.get() }
        }
    }

    @Test func cancellingAFlowFutureOfANIOFutureAbortsOnlyTheFlowSide() async throws {
        try await withLoopGroup { group async throws in
            let promise = group.next().makePromise(of: Int.self)
            let converted = promise.futureResult.flowFuture()
            converted.cancel()
            #expect(converted.result?.error as? FutureError == .aborted)
            promise.succeed(2)
            #expect(try await promise.futureResult.get() == 2)
            #expect(converted.result?.error as? FutureError == .aborted)
        }
    }

    @Test func embeddedLoopConversionsCompleteWhenTheLoopRuns() throws {
        let loop = EmbeddedEventLoop()
        let promise = loop.makePromise(of: Int.self)
        let fromNIO = promise.futureResult.flowFuture()
        promise.succeed(8)
        #expect(fromNIO.result?.value == 8)

        let scheduler = Scheduler(eventLoop: loop)
        let onLoop = Flow.Future<Int>(on: scheduler) { completion in
            completion(.success(4))
            return NilDisposer()
        }
        let toNIO = onLoop.map(on: scheduler) { $0 * 10 }.eventLoopFuture(on: loop)
        let seen = Shared<Int?>(nil)
        toNIO.whenSuccess { seen.set($0) }
        loop.run()
        #expect(seen.value == 40)
    }
}
