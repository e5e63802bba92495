// Running a block of code in a loop's context from any thread, and handing its result back: the one
// mechanism behind every I/O entry point of FlowNet and FlowSystem that may be called off the loop, and
// the documented way for foreign code (a Hummingbird or SwiftNIO handler, a Dispatch queue, a task) to
// run Flow code on a chosen loop.
//
// In the loop's context the block runs at once, as the entry points always did. Elsewhere it runs on
// the loop, as work submitted with `execute`, so that `Scheduler.current` inside it is the loop's
// scheduler and every handler it installs without `on:` runs there. The blocking form waits through
// `Scheduler.sync`, so whatever guards that wait (against waiting for a loop that waits for us) guards
// these waits as well; the `async` form suspends the caller's task instead and never blocks a thread.

extension EventLoop {
    /// Runs `body` in this loop's context and returns its result, waiting for it on another thread.
    ///
    /// In the loop's context (its thread, its callbacks; for ``main`` also the main thread and main
    /// queue) `body` runs at once. Elsewhere it runs on the loop, after the work already queued there,
    /// and the calling thread blocks until it has run: the loop must be running (``main``: driven by
    /// `run()` or by the Dispatch main queue). Inside `body`, `Scheduler.current` is ``scheduler``, so
    /// Flow code written for the loop needs no `on:` arguments.
    ///
    /// ```swift
    /// // In a Dispatch queue, a Hummingbird handler, a thread of your own:
    /// let listener = try flowLoop.performAndWait {
    ///     try TCPListener.listen(port: 0, on: flowLoop) { connection in connection.close() }
    /// }
    /// ```
    ///
    /// Waiting from inside another loop's work blocks that loop until `body` has run, which is safe
    /// unless this loop is itself waiting for that one; from async code and from other loops'
    /// callbacks prefer ``perform(_:)``, which never blocks. Calling it off the loop for a closed loop,
    /// or for a loop other than ``main`` that is not running, stops the program with a message.
    public func performAndWait<Value, Failure: Error>(_ body: () throws(Failure) -> Value) throws(Failure) -> Value {
        try performAndWait("EventLoop.performAndWait", body)
    }

    /// Runs `body` in this loop's context, like ``performAndWait(_:)``, and hands its result back to
    /// the awaiting task without blocking a thread.
    ///
    /// In the loop's context (a task running on the loop's executor, for instance) `body` runs at
    /// once; elsewhere it runs on the loop, after the work already queued there, while the task is
    /// suspended. Inside `body`, `Scheduler.current` is ``scheduler``.
    ///
    /// ```swift
    /// // In a nonisolated async function, a detached task, an actor of another library:
    /// let socket = try await flowLoop.perform {
    ///     let socket = try UDPSocket.bind(port: 0, on: flowLoop)
    ///     socket.onReceive { datagram in socket.send(datagram.bytes, to: datagram.sender) }
    ///     return socket
    /// }
    /// ```
    ///
    /// A `Future` form is `Future(on: loop.scheduler) { ... }`, which runs its block the same way.
    /// Calling it off the loop for a closed loop, or for a loop other than ``main`` that is not
    /// running, stops the program with a message.
    ///
    /// The task waits on its own executor; a main-actor task's wait holds the main loop, so
    /// ``run()`` does not return before the task has its result.
    public nonisolated(nonsending) func perform<Value: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        try await perform("EventLoop.perform", body)
    }

    /// ``performAndWait(_:)`` for an entry point named `caller` in the messages of its misuse stops.
    package func performAndWait<Value, Failure: Error>(
        _ caller: @autoclosure () -> String, _ body: () throws(Failure) -> Value
    ) throws(Failure) -> Value {
        if isInLoopContext {
            assertOpen(caller())
            return try body()
        }
        assertOpen(caller())
        assertSomethingRunsIt(caller())
        let outcome: Swift.Result<Value, Failure> = scheduler.sync(caller()) {
            Swift.Result { () throws(Failure) -> Value in try body() }
        }
        return try outcome.get()
    }

    /// ``perform(_:)`` for an entry point named `caller` in the messages of its misuse stops.
    package nonisolated(nonsending) func perform<Value: Sendable, Failure: Error>(
        _ caller: @autoclosure () -> String, _ body: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        if isInLoopContext {
            assertOpen(caller())
            return try body()
        }
        assertOpen(caller())
        assertSomethingRunsIt(caller())
        let isMainActorWait = EventLoop.beginMainActorWait(#isolation)
        defer { EventLoop.endMainActorWait(isMainActorWait) }
        let outcome: Swift.Result<Value, Failure> = await withCheckedContinuation { continuation in
            execute {
                continuation.resume(returning: Swift.Result { () throws(Failure) -> Value in try body() })
            }
        }
        return try outcome.get()
    }

    /// Runs `work` in the loop's context without waiting for it: at once if the caller is there, else
    /// queued on the loop. For operations that hand their result back through a future or a callback.
    package func performOrQueue(_ caller: @autoclosure () -> String, _ work: @escaping @Sendable () -> Void) {
        assertOpen(caller())
        if isInLoopContext {
            work()
        } else {
            execute(work)
        }
    }

    /// Stops the program with a message naming `caller` if a loop other than ``main`` is not running:
    /// a caller waiting for it would wait for ever when it is the thread meant to run the loop next
    /// (`listen` before `run()` on the same thread), which used to stop with "must be called on the
    /// loop". ``main`` is run by the main thread or the Dispatch main queue, which this cannot tell.
    private func assertSomethingRunsIt(_ caller: @autoclosure () -> String) {
        if !isMainLoop && !isRunning {
            misuseFailure("\(caller()): the loop '\(name)' is not running, so nothing would run this and the caller would wait for ever; call it from the loop's work (execute), or once the loop runs (EventLoop.startOnNewThread returns a running loop)")
        }
    }

    /// Stops the program with a message naming `caller` if the loop is closed: its libuv state is gone,
    /// and a handle of it used from the loop's context (the main thread, for ``main``) would reach freed
    /// memory or fail inside libuv. From other threads, ``execute(_:)`` would stop with its own message.
    @inline(__always)
    package func assertOpen(_ caller: @autoclosure () -> String) {
        if isClosed {
            misuseFailure("\(caller()): the loop '\(name)' is closed, so its handles cannot be used any more; close handles before closing their loop")
        }
    }
}
