extension EventLoop: SerialExecutor, TaskExecutor {
    /// Runs a Swift Concurrency job on this loop, after the work already queued. No closure is
    /// allocated: the job itself goes into the loop's queue.
    ///
    /// An actor pins itself to a loop through ``asUnownedSerialExecutor()``:
    ///
    /// ```swift
    /// actor ConnectionTable {
    ///     nonisolated let loop: EventLoop
    ///     nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
    ///     init(loop: EventLoop) { self.loop = loop }
    ///     func add(_ id: Int) { /* runs on the loop's thread */ }
    /// }
    /// ```
    public func enqueue(_ job: consuming ExecutorJob) {
        enqueue(.job(UnownedJob(job)))
    }

    /// This loop as the executor of an actor pinned to it.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// This loop as a task executor, for `withTaskExecutorPreference(loop) { ... }` and
    /// `Task(executorPreference: loop) { ... }`: the task's nonisolated code runs on the loop.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Whether the caller runs in this loop's context: what an actor pinned to the loop is isolated to.
    public func isIsolatingCurrentContext() -> Bool? {
        isInLoopContext
    }

    /// Stops the program with a message unless the caller runs in this loop's context.
    public func checkIsolated() {
        assertInLoopContext("an actor pinned to this loop")
    }
}
