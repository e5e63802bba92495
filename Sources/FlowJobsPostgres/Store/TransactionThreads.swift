import Dispatch
import Flow
import Foundation

/// The threads a store's transactions run on: at most one per connection of the pool (a transaction
/// holds its connection throughout), started when first needed and kept while the store is open.
///
/// A transaction's code is synchronous (`JobTransaction`) and waits on its thread for each
/// statement's answer from the loop, so it cannot run on the loop. It runs on threads of the store's
/// own rather than on libuv's pool: libuv joins its pool's threads when the process exits, and a
/// transaction waiting there for a loop that no longer runs would keep the process from exiting.
final class TransactionThreads: Sendable {
    private struct State {
        var work: [@Sendable () -> Void] = []
        var threadCount = 0
        var idleCount = 0
        var isStopped = false
    }

    private let state = Locked(State())
    /// Signalled once per queued work and once per thread at stop.
    private let wakeUp = DispatchSemaphore(value: 0)
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Runs `work` on one of the threads, starting a thread when none is idle and the limit allows.
    func run(_ work: @escaping @Sendable () -> Void) {
        let startsThread = state.withLock { state -> Bool in
            state.work.append(work)
            guard state.idleCount == 0, state.threadCount < limit else { return false }
            state.threadCount += 1
            state.idleCount += 1
            return true
        }
        if startsThread {
            let thread = Thread { [self] in runThread() }
            thread.name = "flow.jobs.postgres"
            thread.start()
        }
        wakeUp.signal()
    }

    /// `work`'s result as a future (completed on the thread that ran it).
    func future<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) -> Future<Value> {
        Future(on: .none) { [self] completion in
            run { completion(Result { try work() }) }
            return NilDisposer()
        }
    }

    /// Lets the threads end once the work queued so far has run (work queued later still runs, on a
    /// thread started for it).
    func stop() {
        let threads = state.withLock { state in
            state.isStopped = true
            return state.threadCount
        }
        for _ in 0..<threads { wakeUp.signal() }
    }

    private func runThread() {
        while true {
            wakeUp.wait()
            let next = state.withLock { state -> (@Sendable () -> Void)? in
                if !state.work.isEmpty {
                    state.idleCount -= 1
                    return state.work.removeFirst()
                }
                return nil
            }
            guard let next else {
                let ends = state.withLock { state -> Bool in
                    guard state.isStopped else { return false }
                    state.threadCount -= 1
                    state.idleCount -= 1
                    return true
                }
                if ends { return }
                continue
            }
            next()
            let ends = state.withLock { state -> Bool in
                state.idleCount += 1
                guard state.isStopped, state.work.isEmpty else { return false }
                state.threadCount -= 1
                state.idleCount -= 1
                return true
            }
            if ends { return }
        }
    }

    deinit {
        stop()
    }
}
