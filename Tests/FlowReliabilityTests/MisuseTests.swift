import Dispatch
import Flow
import FlowTesting
import FlowTimers
import Foundation
import Testing

/// The misuse matrix (Docs/MisuseMatrix.md): each way of using the library wrongly, and the outcome
/// it must have: a documented, harmless result, a thrown error, a failed future, or a stop with a
/// message. Never a hang, a silent drop or memory corruption.
///
/// Stops are checked in a child process (an exit test), with the message the program printed.
@Suite("Misuse: event loops")
struct LoopMisuseTests {
    @Test("running a loop that another thread runs throws alreadyRunning; the running loop is unaffected")
    func runningOneLoopFromTwoThreads() throws {
        let loop = EventLoop.startOnNewThread(name: "misuse.twoThreads")
        defer { loop.shutdown() }
        // Wait until the loop's own thread is inside run(): `startOnNewThread` returns before that.
        loop.scheduler.sync {}
        #expect(throws: EventLoopError.alreadyRunning) { try loop.run() }
        #expect(loop.scheduler.sync { loop.isInLoopContext }, "the loop still runs work on its own thread")
    }

    @Test("running or closing EventLoop.main off the main thread throws mainLoopOffMainThread; nothing runs it")
    func runningTheMainLoopOffTheMainThreadThrows() {
        let thrown = Guarded<[EventLoopError]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            do throws(EventLoopError) { try EventLoop.main.run() } catch { thrown.withLock { $0.append(error) } }
            do throws(EventLoopError) { try EventLoop.main.close() } catch { thrown.withLock { $0.append(error) } }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + reliabilityHangGuard) == .success)
        #expect(thrown.current == [.mainLoopOffMainThread, .mainLoopOffMainThread])
        #expect(!EventLoop.main.isRunning && !EventLoop.main.isClosed)
        let description = "\(EventLoopError.mainLoopOffMainThread)"
        #expect(description.contains("EventLoop.main is run and closed by the main thread only"))
    }

    @Test("submit on a closed loop throws EventLoopError.closed and the work never runs; run and close throw closed")
    func submittingToAClosedLoopThrows() throws {
        let loop = EventLoop(name: "misuse.closed")
        try loop.close()
        let ran = AtomicCounter()
        // `Flow::`: Deferred's non-throwing `EventLoop.submit` (its Executor conformance) is visible here too.
        let submit: (@escaping @Sendable () -> Void) throws(EventLoopError) -> Void = loop.Flow::submit(_:)
        #expect(throws: EventLoopError.closed) { try submit { ran.increment() } }
        #expect(throws: EventLoopError.closed) { try loop.run() }
        #expect(throws: EventLoopError.closed) { try loop.close() }
        #expect(ran.current == 0)
    }

    @Test("execute on a closed loop stops the program with a message naming the loop")
    func executingOnAClosedLoopStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = EventLoop(name: "misuse.closedExecute")
            try? loop.close()
            loop.execute { print("must not run") }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("work was submitted to the closed loop 'misuse.closedExecute'"))
    }

    @Test("closing a loop runs every job submitted before the close, from any thread; none is dropped")
    func closingALoopRunsSubmittedWork() throws {
        let loop = EventLoop(name: "misuse.closePending")
        let ran = AtomicCounter()
        let submitted = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            for _ in 0..<10_000 { loop.execute { ran.increment() } }
            submitted.signal()
        }
        #expect(submitted.wait(timeout: .now() + reliabilityHangGuard) == .success)
        try loop.close()
        #expect(ran.current == 10_000)
    }

    @Test("closing a loop fails the library's futures waiting on its timers (here a delay) with FutureAbandonedError")
    func closingALoopFailsFuturesWaitingOnItsTimers() throws {
        let loop = EventLoop(name: "misuse.closeTimers")
        let delayed = Future(1).delay(on: loop.scheduler) { _ in 3600 }
        #expect(delayed.result == nil)
        try loop.close()
        let error = try #require(delayed.result?.error)
        #expect(error is FutureAbandonedError, "got \(error)")
        #expect("\(error)".contains("released its completion callback without calling it"))
    }

    @Test("shutting a loop down fails a repetition waiting on the loop's timer between runs with FutureAbandonedError")
    func shuttingALoopDownFailsARepetitionWaitingOnItsTimer() throws {
        let loop = EventLoop.startOnNewThread(name: "misuse.closeRepeat")
        let runs = AtomicCounter()
        let repeated = loop.scheduler.sync {
            Future<Int>(on: .none) { completion in
                runs.increment()
                completion(.failure(CancellationError()))
                return NilDisposer()
            }
            .onErrorRepeat(delayBetweenRepetitions: 3600)
        }
        loop.shutdown()
        let error = try #require(repeated.result?.error)
        #expect(error is FutureAbandonedError, "got \(error)")
        #expect(runs.current == 1)
    }

    @Test("shutting a loop down fails a timeout(after:) waiting on the loop's timer with FutureAbandonedError")
    func shuttingALoopDownFailsATimeoutWaitingOnItsTimer() throws {
        let loop = EventLoop.startOnNewThread(name: "misuse.closeTimeout")
        let limited = loop.scheduler.sync { Future<Int>(.forever).timeout(after: 3600) }
        loop.shutdown()
        let error = try #require(limited.result?.error)
        #expect(error is FutureAbandonedError, "got \(error)")
    }

    @Test("closing a loop leaves a user's operation whose timer it dropped pending, as Flow would, until cancelled")
    func closingALoopLeavesAUsersOperationPending() throws {
        let loop = EventLoop(name: "misuse.closeUserTimer")
        let delayed = Future<Int>(on: .none) { completion in
            loop.execute(after: 3600) { completion(.success(1)) }
            return NilDisposer()
        }
        // The close releases the callback with the timer: reported in debug builds, captured here.
        try expectDebugDiagnostic(containing: "released its completion callback without calling it") {
            try loop.close()
        }
        #expect(delayed.result == nil)
        delayed.cancel()
        #expect(delayed.result?.error as? FutureError == .aborted)
    }

    @Test("closing a loop from its own work throws closedFromInsideTheLoop and the loop keeps running")
    func closingALoopFromInsideThrows() {
        let loop = EventLoop.startOnNewThread(name: "misuse.closeInside")
        defer { loop.shutdown() }
        let thrown = loop.scheduler.sync { () -> EventLoopError? in
            do throws(EventLoopError) { try loop.close() } catch { return error }
            return nil
        }
        #expect(thrown == .closedFromInsideTheLoop)
        #expect(loop.scheduler.sync { true })
    }

    @Test("shutdown() called on the loop's own thread stops the program instead of waiting for itself")
    func shutdownOnTheLoopThreadStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = EventLoop.startOnNewThread(name: "misuse.shutdownInside")
            loop.scheduler.sync { loop.shutdown() }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("called on the loop's own thread"))
    }

    @Test("Scheduler.sync called on the loop's own thread runs the work at once instead of deadlocking")
    func syncOnTheLoopThreadRunsInline() {
        let loop = EventLoop.startOnNewThread(name: "misuse.syncInside")
        defer { loop.shutdown() }
        let nested = loop.scheduler.sync { loop.scheduler.sync { loop.isInLoopContext } }
        #expect(nested)
    }

    @Test("EventLoop.run(until:) on the thread already running the loop throws alreadyRunning instead of nesting")
    func runUntilOnTheLoopThreadThrows() {
        let loop = EventLoop.startOnNewThread(name: "misuse.runUntilInside")
        defer { loop.shutdown() }
        let thrown = loop.scheduler.sync { () -> Bool in
            do { try loop.run(until: Future<Int>(.forever)) } catch EventLoopError.alreadyRunning { return true } catch {}
            return false
        }
        #expect(thrown)
    }
}

@Suite("Misuse: delays")
struct DelayMisuseTests {
    @Test("a negative delay counts as zero: the work runs at the next turn of the loop")
    func negativeDelayRunsAtOnce() {
        let loop = EventLoop.startOnNewThread(name: "misuse.negative")
        defer { loop.shutdown() }
        let ran = DispatchSemaphore(value: 0)
        loop.execute(after: -5) { ran.signal() }
        loop.scheduler.async(after: -1) { ran.signal() }
        #expect(ran.wait(timeout: .now() + reliabilityHangGuard) == .success)
        #expect(ran.wait(timeout: .now() + reliabilityHangGuard) == .success)
    }

    @Test("a negative delay on a future or a virtual clock is no delay")
    func negativeFutureDelayIsNone() {
        let clock = VirtualTimeScheduler()
        let delayed = clock.scheduler.sync { Future(1).delay(by: -3) }
        clock.advance(by: .zero)
        #expect(delayed.result?.value == 1)
    }

    @Test(
        "a delay that is not a finite number stops the program with a message",
        arguments: ["nan", "infinity", "-infinity"])
    func nonFiniteDelayStops(_ spelling: String) async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [spelling] in
            let delay = Double(spelling)!
            let loop = EventLoop(name: "misuse.nonFinite")
            loop.execute(after: delay) {}
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("the delay must be a finite number of seconds"))
    }

    @Test("an infinite delay on a Dispatch-queue scheduler stops the program with a message")
    func infiniteSchedulerDelayStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Scheduler.background.async(after: .infinity) {}
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Scheduler.async(after:): the delay must be a finite number of seconds, not inf"))
    }

    @Test("Future.delay(by: .nan) stops the program with a message, like the schedulers")
    func nanFutureDelayStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let clock = VirtualTimeScheduler()
            _ = clock.scheduler.sync { Future(1).delay(by: .nan) }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("Future.delay: the delay must be a finite number of seconds, not nan"))
    }
}

@Suite("Misuse: futures and queues")
struct FutureMisuseTests {
    @Test("completing a future twice keeps the first result; the second completion is ignored")
    func completingTwiceKeepsTheFirst() {
        let promise = Promise<Int>()
        let observed = AtomicCounter()
        promise.future.onValue(on: .none) { _ in observed.increment() }
        let completion = Guarded<(@Sendable (Result<Int>) -> Void)?>(nil)
        let future = Future<Int>(on: .none) { done in
            completion.withLock { $0 = done }
            return NilDisposer()
        }
        let done = completion.current!
        done(.success(1))
        done(.success(2))
        done(.failure(StressError(code: 3)))
        #expect(future.result?.value == 1)
        promise.succeed(1)
        promise.succeed(2)
        #expect(observed.current == 1)
    }

    @Test("maxRepetitions below zero stops the program with a message")
    func negativeMaxRepetitionsStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            Future<Int>(error: StressError(code: 1)).onErrorRepeat(maxRepetitions: -1)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("maxRepetitions must be 0 or more, not -1"))
    }

    @Test("maxRepetitions 0 runs the operation once and keeps its error")
    func zeroMaxRepetitionsRunsOnce() {
        let runs = AtomicCounter()
        let future = Future<Int>(on: .none) { completion in
            completion(.failure(StressError(code: runs.increment())))
            return NilDisposer()
        }.onErrorRepeat(maxRepetitions: 0)
        #expect(runs.current == 1)
        #expect(future.result?.error as? StressError == StressError(code: 1))
    }

    @Test("enqueueing on a closed FutureQueue fails with its closedError and never runs the operation")
    func enqueueingOnAClosedQueueFails() {
        let clock = VirtualTimeScheduler()
        let queue = FutureQueue(executeOn: clock.scheduler)
        queue.abortQueuedOperations(with: StressError(code: 9), shouldCloseQueue: true)
        let ran = AtomicCounter()
        let rejected = clock.scheduler.sync {
            queue.enqueue { () -> Int in
                ran.increment()
                return 1
            }
        }
        clock.runUntilIdle()
        #expect(rejected.result?.error as? StressError == StressError(code: 9))
        #expect(queue.closedError as? StressError == StressError(code: 9))
        #expect(ran.current == 0)
    }

    @Test("select(between: []) stops the program with a message: it could never complete")
    func selectBetweenNothingStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = select(between: [Future<Int>]())
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("select(between:) needs at least one future"))
    }

    @Test("a FutureQueue with maxConcurrentCount 0 stops the program with a message")
    func zeroConcurrencyQueueStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = FutureQueue(maxConcurrentCount: 0)
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("maxConcurrentCount must be at least 1"))
    }

    @Test("an operation that drops its completion callback leaves its future pending, so select and replace work around it")
    func droppedCompletionLeavesTheFuturePending() {
        let (never, selected) = expectDebugDiagnostic(2, containing: "released its completion callback without calling it") {
            (Future<Int>(on: .none) { _ in NilDisposer() }, select(Future(1), or: Future<Int>(on: .none) { _ in NilDisposer() }))
        }
        #expect(never.result == nil)
        #expect(selected.result?.value?.left == 1)
        never.cancel()
        #expect(never.result?.error as? FutureError == .aborted)
    }

    #if DEBUG
    @Test("in debug builds, a dropped completion callback is reported on standard error with the future's creation site")
    func droppedCompletionIsReported() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            _ = Future<Int>(on: .none) { _ in NilDisposer() }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("released its completion callback without calling it"))
        #expect(message.contains("MisuseTests.swift:"))
    }
    #endif
}
