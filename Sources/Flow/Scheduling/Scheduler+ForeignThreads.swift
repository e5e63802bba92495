import Synchronization

extension Scheduler {
    /// Registers a function that names the scheduler of the calling thread when that thread belongs to
    /// another library's event loop, such as a SwiftNIO loop.
    ///
    /// ``current`` asks the registered functions on a thread where no scheduler of this library is
    /// running, before falling back to ``background``; the first answer is kept as that thread's
    /// scheduler for the rest of its life. So a callback registered from a SwiftNIO channel handler
    /// runs on that handler's loop, at once when the future has already completed, with no hop.
    /// Bridges call this once (FlowNIO does it on first use); most programs never need to.
    ///
    /// ```swift
    /// Scheduler.registerForeignThreadScheduler {
    ///     MyRunLoop.current.map { Scheduler(backend: $0) }
    /// }
    /// ```
    ///
    /// - Parameter resolve: returns the scheduler whose work runs on the calling thread, or `nil` when
    ///   the thread is not one of its own. Called from any thread; it must be cheap and must not block.
    @preconcurrency
    public static func registerForeignThreadScheduler(_ resolve: @escaping @Sendable () -> Scheduler?) {
        foreignThreadResolvers.withLock { $0.append(resolve) }
        hasForeignThreadResolvers.store(true, ordering: .releasing)
    }

    /// The scheduler a registered function names for the calling thread, kept as the thread's current
    /// scheduler from then on; `nil` when none is registered or none answers.
    ///
    /// Only called where the thread runs no scheduler's work (its current scheduler is `nil`), so the
    /// value kept is the one every ``ThreadContext/run(as:loop:_:)`` on this thread restores.
    @usableFromInline
    static func foreignThreadScheduler(in context: ThreadContext) -> Scheduler? {
        guard hasForeignThreadResolvers.load(ordering: .acquiring) else { return nil }
        let resolvers = foreignThreadResolvers.withLock { $0 }
        for resolve in resolvers {
            if let scheduler = resolve() {
                context.currentScheduler = scheduler
                return scheduler
            }
        }
        return nil
    }

    private static let foreignThreadResolvers = Locked<[@Sendable () -> Scheduler?]>([])
    private static let hasForeignThreadResolvers = Atomic<Bool>(false)
}
