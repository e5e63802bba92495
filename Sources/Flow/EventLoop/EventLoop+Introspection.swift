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
        let counter = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        counter.initialize(to: 0)
        defer { counter.deallocate() }
        uv_walk(uvLoop, countHandle, counter)
        return counter.pointee
    }
}

/// `uv_walk`'s callback for ``EventLoop/openHandleCount``: adds one to the count `argument` points to.
private func countHandle(_ handle: UnsafeMutablePointer<uv_handle_t>?, _ argument: UnsafeMutableRawPointer?) {
    argument?.assumingMemoryBound(to: Int.self).pointee += 1
}
