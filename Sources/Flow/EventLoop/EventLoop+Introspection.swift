import CLibUV

extension EventLoop {
    /// How many libuv handles the loop holds: listeners, connections, timers, processes, signal
    /// watchers, those still closing, and the loop's own few (its wake-up handle and deadline timer
    /// among them). Loop context only, since libuv's handle list belongs to the loop's thread.
    ///
    /// A count that keeps growing while the load does not is a handle leak.
    ///
    /// ```swift
    /// loop.execute { print("\(loop.openHandleCount) handles open") }
    /// ```
    public var openHandleCount: Int {
        assertInLoopContext("EventLoop.openHandleCount")
        var count = 0
        withUnsafeMutablePointer(to: &count) { counter in
            uv_walk(uvLoop, { _, argument in
                argument!.assumingMemoryBound(to: Int.self).pointee += 1
            }, counter)
        }
        return count
    }

    /// Whether work posted to the loop (from its thread or from others) is waiting to run: 1 if
    /// some is, 0 if none. A stand-in for the number of queued jobs, which EventLoop keeps private;
    /// sampled from the loop's own work, it reads the work queued behind the sampler.
    package var queuedWorkEstimate: Int {
        hasQueuedWork ? 1 : 0
    }
}
