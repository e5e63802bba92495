import Dispatch
import Flow
import FlowSystem
import Testing

#if canImport(Glibc)
import Glibc
#endif

// One at a time: the signals are sent to this whole process (with `kill`, never `raise`, which would
// send them to the calling thread, where they may be blocked).
@Suite("OS signals", .serialized)
struct SignalTests {
    @Test func aWatchedSignalReachesTheHandlerOnTheLoopAndTheProcessLives() throws {
        let received = Shared<[ProcessSignal]>([])
        try runLoop { loop in
            let watcher = LoopState<SignalWatcher?>(nil)
            watcher.value = try! SignalWatcher.watch([.user1, .user2], on: loop) { signal in
                #expect(loop.isInLoopContext)
                received.mutate { $0.append(signal) }
                if received.value.count == 2 { watcher.value?.close() } else { kill(getpid(), SIGUSR2) }
            }
            kill(getpid(), SIGUSR1)
        }
        #expect(received.value == [.user1, .user2])
    }

    @Test func theFirstSignalIsAFutureAndWatchingStopsThen() throws {
        let first = Shared<Result<ProcessSignal>?>(nil)
        try runLoop { loop in
            SignalWatcher.first(of: [.hangUp, .user1], on: loop).onResult { first.value = $0 }
            loop.execute { kill(getpid(), SIGUSR1) }
        }
        #expect(try #require(first.value).get() == .user1)
        #expect(ProcessSignal.user1.description == "SIGUSR1")
    }

    @Test func signalsAreAnAsyncSequenceThatEndsWhenTheWatcherCloses() async throws {
        let loop = EventLoop.startOnNewThread(name: "signals.async")
        defer { loop.shutdown() }
        let watcher = try loop.scheduler.sync { try SignalWatcher.watch([.user2], on: loop) }
        var iterator = watcher.signals.makeAsyncIterator()
        kill(getpid(), SIGUSR2)
        #expect(await iterator.next() == .user2)
        _ = wait(for: watcher.close())
        #expect(await iterator.next() == nil)
    }

    @Test func cancellingTheFirstSignalFutureClosesItsWatcher() throws {
        let outcome = Shared<Result<ProcessSignal>?>(nil)
        try runLoop { loop in
            let first = SignalWatcher.first(of: [.user1], on: loop)
            let observed = first.onResult { outcome.value = $0 }
            // Cancelling the last link cancels the chain up to the watcher; runLoop returning at all
            // shows that the watcher's handle was closed.
            loop.execute { observed.cancel() }
        }
        #expect(outcome.value == nil)
    }

    @Test func aFirstSignalFutureCancelledBeforeItsLoopStartsWatchingWatchesNothing() throws {
        try runLoop { loop in
            // Made and cancelled on another thread while the loop is busy with this job: the watch is
            // still queued when the cancellation comes, and must not start then. (Not keeping the loop
            // alive, so that a watcher left open shows as a handle left behind rather than a hang.)
            let cancelled = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                SignalWatcher.first(of: [.user1], keepsLoopAlive: false, on: loop).cancel()
                cancelled.signal()
            }
            expectSignal(cancelled, "the cancellation")
        }
    }

    @Test func aSignalThatCannotBeWatchedIsAClearError() throws {
        let failure = Shared<String?>(nil)
        try runLoop { loop in
            do {
                _ = try SignalWatcher.watch([.user1, .kill], on: loop)
            } catch {
                failure.value = "\(error)"
            }
        }
        #expect(failure.value == "EINVAL: invalid argument")
    }

    /// A fault signal returns to the faulting instruction after libuv's handler noted it, which faults
    /// again for good: watching one is refused, and nothing is left open.
    @Test func aFaultSignalCannotBeWatched() throws {
        let failures = Shared<[String]>([])
        try runLoop { loop in
            for number in [SIGSEGV, SIGBUS, SIGFPE, SIGILL] {
                do {
                    _ = try SignalWatcher.watch([.user1, ProcessSignal(rawValue: number)], on: loop)
                } catch {
                    failures.value.append("\(error)")
                }
            }
        }
        #expect(failures.value == Array(repeating: "EINVAL: invalid argument", count: 4))
    }

    @Test func closingAWatcherAfterItsLoopClosedFailsClearlyAndEndsItsSequences() async throws {
        let loop = EventLoop.startOnNewThread(name: "signals.closed")
        let watcher = try loop.scheduler.sync { try SignalWatcher.watch([.user1], on: loop) }
        var iterator = watcher.signals.makeAsyncIterator()
        loop.shutdown()
        let result = wait(for: watcher.close())
        #expect(result?.error as? EventLoopError == .closed)
        #expect(await iterator.next() == nil)
    }
}
