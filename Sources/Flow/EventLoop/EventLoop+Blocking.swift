import CLibUV

// What code that blocks a thread (a synchronous wait, as Deferred's `wait(until:)`) needs to know
// about a loop: whether blocking here would stop the loop's own work, and whether that work is waiting.

extension EventLoop {
    /// Whether the caller runs inside this loop's own work on this thread: a callback of ``run()``, or
    /// a pass of the main loop driven by the Dispatch main queue.
    ///
    /// Blocking the thread there stops the loop until the block ends: nothing the loop would run next
    /// (a timer, I/O, work submitted to it) can happen meanwhile. Code on the loop's thread outside
    /// its work (top-level code on the main thread before the loop runs, a block of the main queue
    /// between passes) blocks only itself.
    public var isRunningItsWorkOnThisThread: Bool {
        ThreadContext.current.currentLoop == ObjectIdentifier(self)
    }

    /// Whether the loop holds work that is yet to run: jobs submitted to it, timers, active handles.
    ///
    /// Meaningful only in the loop's context while it is not running (for ``main``: on the main
    /// thread outside the loop's work), where it tells whether blocking the thread holds up work
    /// that only this thread can run.
    public var hasWorkWaitingToRun: Bool {
        hasQueuedWork || uv_loop_alive(uvLoop) != 0
    }
}
