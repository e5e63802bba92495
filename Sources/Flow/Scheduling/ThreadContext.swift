import CFlowSupport

/// What the calling thread is doing for this library: which scheduler's work runs here, how deep
/// immediate work is nested, and the work deferred because it was nested too deeply.
///
/// A handle on the thread's ``ThreadState``, which lives in memory of its own reached through a C
/// thread-local (see `CFlowSupport.h`), so that the question "am I already on this scheduler?"
/// costs a few instructions and no reference counting: a class instance would be retained and
/// released on every access. Only its own thread touches the state, which is why it needs no lock.
@usableFromInline
struct ThreadContext {
    @usableFromInline
    let state: UnsafeMutablePointer<ThreadState>

    @inlinable
    init(state: UnsafeMutablePointer<ThreadState>) {
        self.state = state
    }

    /// The calling thread's context, created on first use and freed when the thread exits.
    @inlinable
    static var current: ThreadContext {
        if let pointer = flow_get_thread_context() {
            return ThreadContext(state: pointer.assumingMemoryBound(to: ThreadState.self))
        }
        return makeCurrent()
    }

    @usableFromInline
    static func makeCurrent() -> ThreadContext {
        registerDestructor
        FutureLayout.checked
        let state = UnsafeMutablePointer<ThreadState>.allocate(capacity: 1)
        state.initialize(to: ThreadState(isMainThread: flow_is_main_thread() != 0))
        flow_set_thread_context(state)
        flow_retain_thread_context_until_exit(state)
        return ThreadContext(state: state)
    }

    private static let registerDestructor: Void = {
        flow_register_thread_context_destructor { pointer in
            let state = pointer.assumingMemoryBound(to: ThreadState.self)
            state.deinitialize(count: 1)
            state.deallocate()
        }
    }()

    /// Nesting allowed before immediate work is deferred to the trampoline. Low enough that even
    /// debug-build frames stay well inside a 512 KiB thread stack, high enough that ordinary code
    /// (a callback on a completed future inside another callback) still runs synchronously.
    @usableFromInline
    static let maximumImmediateDepth = 24

    // MARK: The state

    /// The scheduler whose work is running on this thread right now, if any.
    @inlinable
    var currentScheduler: Scheduler? {
        get { state.pointee.currentScheduler }
        nonmutating set { state.pointee.currentScheduler = newValue }
    }

    /// Whether the scheduler running this thread's work has the ``Scheduler/identity`` given as its
    /// bits: read in place, without retaining the scheduler as a copy of ``currentScheduler`` does.
    @inlinable
    func currentSchedulerHasIdentity(_ identityBits: UInt) -> Bool {
        guard let identity = state.pointee.currentScheduler?.identity else { return false }
        return UInt(bitPattern: identity) == identityBits
    }

    /// The event loop running on this thread right now, if any, by identity. (The loop is kept alive
    /// by whoever runs it.)
    @inlinable
    var currentLoop: ObjectIdentifier? {
        get { state.pointee.currentLoop }
        nonmutating set { state.pointee.currentLoop = newValue }
    }

    /// How many immediate executions are nested on this thread's stack.
    @inlinable
    var immediateDepth: Int {
        get { state.pointee.immediateDepth }
        nonmutating set { state.pointee.immediateDepth = newValue }
    }

    /// Work that asked to run immediately while ``immediateDepth`` was at ``maximumImmediateDepth``;
    /// the outermost immediate execution runs it once the stack has unwound.
    @inlinable
    var deferredWork: JobQueue {
        _read { yield state.pointee.deferredWork }
        nonmutating _modify { yield &state.pointee.deferredWork }
    }

    /// Whether this is the process's first thread (asked once: it needs a system call).
    @inlinable
    var isMainThread: Bool { state.pointee.isMainThread }

    /// References moved here by a deinitialiser, to be dropped by ``drainPendingReleases()``.
    ///
    /// Dropping the head of a million-link chain would otherwise release the links one inside the
    /// other and overflow the stack. A deinitialiser moves its links here (the move must leave this
    /// array holding the last reference) and calls ``drainPendingReleases()``; only the outermost
    /// drain on the thread runs, so the links are released one after another.
    var pendingReleases: [AnyObject] {
        _read { yield state.pointee.pendingReleases }
        nonmutating _modify { yield &state.pointee.pendingReleases }
    }

    // MARK: Immediate execution

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

    func drainPendingReleases() {
        guard !state.pointee.isReleasing else { return }
        state.pointee.isReleasing = true
        while !pendingReleases.isEmpty {
            // The popped reference is dropped here, at this depth; nested deinitialisers only append.
            _ = pendingReleases.removeLast()
        }
        state.pointee.isReleasing = false
    }

    /// Runs `body` as work of `scheduler` (and of `loop`, when given): ``Scheduler/current`` answers
    /// `scheduler` inside it, with a fresh immediate-execution budget and its own deferred work.
    @inlinable
    func run<T>(as scheduler: Scheduler, loop: EventLoop? = nil, _ body: () throws -> T) rethrows -> T {
        let savedScheduler = currentScheduler
        let savedLoop = currentLoop
        let savedDepth = immediateDepth
        var savedDeferred = deferredWork.takeAll()
        currentScheduler = scheduler
        if let loop { currentLoop = ObjectIdentifier(loop) }
        immediateDepth = 0
        defer {
            drainDeferredWork()
            currentScheduler = savedScheduler
            currentLoop = savedLoop
            immediateDepth = savedDepth
            swap(&deferredWork, &savedDeferred)
        }
        return try body()
    }
}

/// One thread's ``ThreadContext`` state: see there.
@usableFromInline
struct ThreadState: ~Copyable {
    @usableFromInline var currentScheduler: Scheduler?
    @usableFromInline var currentLoop: ObjectIdentifier?
    @usableFromInline var immediateDepth = 0
    @usableFromInline var deferredWork = JobQueue()
    @usableFromInline let isMainThread: Bool
    @usableFromInline var pendingReleases: [AnyObject] = []
    @usableFromInline var isReleasing = false
    /// The loop that the work running here, handed off from it, will deliver back to.
    @usableFromInline var deliveryLoop: EventLoop?

    @usableFromInline
    init(isMainThread: Bool) {
        self.isMainThread = isMainThread
    }
}
