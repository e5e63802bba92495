import Flow

#if canImport(Glibc)
import Glibc
#endif

/// Hands out the pool threads that work which may block for long may hold: half of libuv's pool,
/// at least one, process-wide, since the pool is (FlowSystem's `ThreadPool.blockingWorkLimit`). The
/// rest waits here, first come first served. Name lookups (which hang with an unreachable resolver)
/// hold slots, as do FlowSystem's `ThreadPool.run(mayBlock: true)` work and opens of FIFOs and
/// devices, so that together they leave the other threads free for file operations.
package final class BlockingWorkLimiter: Sendable {
    package static let shared = BlockingWorkLimiter()

    /// How many slots there are: half the pool's threads, at least one. The pool's size is what libuv
    /// reads once, `UV_THREADPOOL_SIZE` (which FlowSystem's `ThreadPool.setSize` sets), else 4.
    package static var limit: Int {
        let size: Int
        if let text = getenv("UV_THREADPOOL_SIZE") {
            size = min(max(Int(atoi(text)), 1), 1024)
        } else {
            size = 4
        }
        return max(1, size / 2)
    }

    private struct State {
        var holders = 0
        var waiting: [@Sendable () -> Void] = []
        var nextWaiting = 0
    }

    private let state = Locked(State())

    /// Calls `start` (on this thread, or later on the thread releasing a slot) once a slot is free;
    /// whoever `start` leads to must call ``release()`` exactly once.
    package func whenSlotFree(_ start: @escaping @Sendable () -> Void) {
        let limit = Self.limit
        let startsNow = state.withLock { state -> Bool in
            if state.holders < limit {
                state.holders += 1
                return true
            }
            state.waiting.append(start)
            return false
        }
        if startsNow { start() }
    }

    /// Gives the slot to the longest-waiting work, or frees it.
    package func release() {
        let next = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.nextWaiting < state.waiting.count else {
                state.holders -= 1
                return nil
            }
            let next = state.waiting[state.nextWaiting]
            state.nextWaiting += 1
            if state.nextWaiting == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.nextWaiting = 0
            }
            return next
        }
        next?()
    }
}
