import CFlowSupport

/// What the calling thread is doing for this library: which scheduler's work runs here, how deep
/// immediate work is nested, and the work deferred because it was nested too deeply.
///
/// One instance per thread, reached through a C thread-local (see `CFlowSupport.h`), so that the
/// question "am I already on this scheduler?" costs a few instructions. Only its own thread touches
/// it, which is why it needs no lock, and why the runtime's exclusivity checks on its fields are
/// turned off: they cost more than the work they guard.
@usableFromInline
final class ThreadContext {
    /// The scheduler whose work is running on this thread right now, if any.
    @usableFromInline
    @exclusivity(unchecked)
    var currentScheduler: Scheduler?

    /// The event loop running on this thread right now, if any.
    @usableFromInline
    @exclusivity(unchecked)
    var currentLoop: EventLoop?

    /// How many immediate executions are nested on this thread's stack.
    @usableFromInline
    @exclusivity(unchecked)
    var immediateDepth = 0

    /// Work that asked to run immediately while ``immediateDepth`` was at ``maximumImmediateDepth``;
    /// the outermost immediate execution runs it once the stack has unwound.
    @usableFromInline
    @exclusivity(unchecked)
    var deferredWork = JobQueue()

    /// Nesting allowed before immediate work is deferred to the trampoline. Low enough that even
    /// debug-build frames stay well inside a 512 KiB thread stack, high enough that ordinary code
    /// (a callback on a completed future inside another callback) still runs synchronously.
    @usableFromInline
    static let maximumImmediateDepth = 24

    /// Whether this is the process's first thread (asked once: it needs a system call).
    @usableFromInline
    let isMainThread: Bool

    init() {
        isMainThread = flow_is_main_thread() != 0
    }

    /// The calling thread's context, created on first use and released when the thread exits.
    @inlinable
    static var current: ThreadContext {
        if let pointer = flow_get_thread_context() {
            return Unmanaged<ThreadContext>.fromOpaque(pointer).takeUnretainedValue()
        }
        return makeCurrent()
    }

    @usableFromInline
    static func makeCurrent() -> ThreadContext {
        registerDestructor
        let context = ThreadContext()
        let pointer = Unmanaged.passRetained(context).toOpaque()
        flow_set_thread_context(pointer)
        flow_retain_thread_context_until_exit(pointer)
        return context
    }

    private static let registerDestructor: Void = {
        flow_register_thread_context_destructor { pointer in
            Unmanaged<ThreadContext>.fromOpaque(pointer).release()
        }
    }()

    /// Runs `work` now, unless this thread is already ``maximumImmediateDepth`` immediate executions
    /// deep: then `work` runs as soon as the outermost of them returns. Either way it runs on this
    /// thread, in the current scheduler's context, before control leaves that context.
    @inlinable
    func runImmediately(_ work: @escaping () -> Void) {
        guard enterImmediateFrame() else {
            deferredWork.append(work)
            return
        }
        work()
        exitImmediateFrame()
    }

    /// Opens an immediate-execution frame, unless the thread is already too deep.
    ///
    /// - Returns: whether the frame was opened; if so, the caller runs its work and then calls
    ///   ``exitImmediateFrame()``. If not, the caller defers its work (``deferredWork``).
    @inlinable
    func enterImmediateFrame() -> Bool {
        guard immediateDepth < ThreadContext.maximumImmediateDepth else { return false }
        immediateDepth += 1
        return true
    }

    /// Closes a frame opened by ``enterImmediateFrame()``; the outermost one runs deferred work.
    @inlinable
    func exitImmediateFrame() {
        if immediateDepth == 1 { drainDeferredWork() }
        immediateDepth -= 1
    }

    @usableFromInline
    func drainDeferredWork() {
        while let next = deferredWork.popFirst() {
            next()
        }
    }

    /// References moved here by a deinitialiser, to be dropped by ``drainPendingReleases()``.
    ///
    /// Dropping the head of a million-link chain would otherwise release the links one inside the
    /// other and overflow the stack. A deinitialiser moves its links here (the move must leave this
    /// array holding the last reference) and calls ``drainPendingReleases()``; only the outermost
    /// drain on the thread runs, so the links are released one after another.
    @exclusivity(unchecked) var pendingReleases: [AnyObject] = []
    @exclusivity(unchecked) var isReleasing = false

    func drainPendingReleases() {
        guard !isReleasing else { return }
        isReleasing = true
        while !pendingReleases.isEmpty {
            // The popped reference is dropped here, at this depth; nested deinitialisers only append.
            _ = pendingReleases.removeLast()
        }
        isReleasing = false
    }

    /// Runs `body` as work of `scheduler` (and of `loop`, when given): ``Scheduler/current`` answers
    /// `scheduler` inside it, with a fresh immediate-execution budget and its own deferred work.
    @inlinable
    func run<T>(as scheduler: Scheduler, loop: EventLoop? = nil, _ body: () throws -> T) rethrows -> T {
        let savedScheduler = currentScheduler
        let savedLoop = currentLoop
        let savedDepth = immediateDepth
        let savedDeferred = deferredWork.takeAll()
        currentScheduler = scheduler
        if let loop { currentLoop = loop }
        immediateDepth = 0
        defer {
            drainDeferredWork()
            currentScheduler = savedScheduler
            currentLoop = savedLoop
            immediateDepth = savedDepth
            deferredWork = savedDeferred
        }
        return try body()
    }
}
