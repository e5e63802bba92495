import CFlowSupport
import CLibUV
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A libuv event loop and the thread that runs it: the default place where this library's work,
/// timers and I/O happen.
///
/// libuv is single-threaded: only the thread running the loop touches it. Other threads hand work to
/// the loop with ``execute(_:)``, which queues it and wakes the loop; work from one thread runs in the
/// order submitted. ``EventLoop/main`` is the main thread's loop, behind ``Scheduler/main``.
///
/// ```swift
/// let loop = EventLoop.main
/// loop.execute { print("on the loop") }
/// loop.execute(after: 0.5) { print("half a second later") }
/// try loop.run()   // returns when nothing is left to do
/// ```
///
/// A loop lives until ``close()``: like a thread, it is not freed just because nobody refers to it.
public final class EventLoop: @unchecked Sendable {
    // @unchecked Sendable: the libuv structures and every `loop*` property below are touched only in
    // the loop's context (the thread inside `run()`, or the main queue for the main loop);
    // `submissions` is guarded by its lock; `lifecycle`, `keepAliveCount` and `isStopRequested` are
    // atomics.

    // MARK: Loop-context state
    // Touched only in the loop's context, one callback at a time: the runtime's exclusivity checks
    // are turned off for the hottest of these fields.

    let uvLoop: UnsafeMutablePointer<uv_loop_t>
    private let wakeHandle: UnsafeMutablePointer<uv_async_t>
    private let deadlineTimer: UnsafeMutablePointer<uv_timer_t>
    /// Active while the loop's own queue holds work: libuv then polls for I/O without blocking and
    /// calls back to drain it. Cheaper than waking the loop through its eventfd (a system call).
    private let drainHandle: UnsafeMutablePointer<uv_idle_t>
    private var loopIsDrainHandleActive = false
    @exclusivity(unchecked)
    private var loopJobs = WorkQueue<LoopWork>()
    @exclusivity(unchecked)
    private var loopDeadlines = DeadlineQueue()
    @exclusivity(unchecked)
    private var loopSpareBatch = WorkQueue<LoopWork>()
    @exclusivity(unchecked)
    private var loopIsDraining = false
    private var loopIsWakeHandleReferenced = false
    private var loopMainQueueDrain: UnsafeMutablePointer<uv_poll_t>?
    private var loopArmedDeadline: UInt64 = .max
    /// Whether `uv_run` is on the stack (for the main loop, whichever driver called it).
    var loopIsInsideRun = false

    // MARK: Shared state

    private struct Submissions: ~Copyable {
        var jobs = WorkQueue<LoopWork>()
        var isClosed = false
    }

    private let submissions = Locked(Submissions())
    /// Named handles and keep-alive tokens, for ``activeResources()``.
    let resourceRegistry = Locked(LoopResourceRegistry())
    private let lifecycle = Atomic<Int>(Lifecycle.idle)
    private let keepAliveCount = Atomic<Int>(0)
    /// Work handed from this loop to another scheduler that may deliver back to it, not yet done
    /// (see `EventLoop+Deliveries.swift`).
    let pendingDeliveryCount = Atomic<Int>(0)
    /// Whether ``run()`` found nothing but pending deliveries and waits for them: only then does the
    /// last delivery to end wake the loop.
    let isAwaitingDeliveries = Atomic<Bool>(false)
    private let isStopRequested = Atomic<Bool>(false)
    private let nextSequence = Atomic<UInt64>(0)

    private enum Lifecycle {
        static let idle = 0
        static let running = 1
        static let closing = 2
        static let closed = 3
        /// Another thread reads the loop's state while nothing runs it (``activeResources()``):
        /// ``run()`` and ``close()`` wait until it is done, which takes a moment.
        static let inspecting = 4
    }

    /// The scheduler that runs work on this loop. Schedulers of the same loop are equal.
    ///
    /// A scheduler keeps its loop alive; the loop does not keep a scheduler (that would be a cycle,
    /// and a loop could never be freed). Inside the loop's own work this returns the scheduler that
    /// work runs as; elsewhere it makes a small one on each call, except for the main loop's, which
    /// lives for the whole program.
    public var scheduler: Scheduler {
        if isMainLoop { return Scheduler.mainLoopScheduler }
        if let current = ThreadContext.current.currentScheduler, case .loop(let loop) = current.backend, loop === self {
            return current
        }
        return Scheduler(loop: self)
    }

    /// A short name for logs and descriptions.
    public let name: String

    @usableFromInline
    let isMainLoop: Bool
    private var mainQueueEmbedding: MainQueueEmbedding?

    // MARK: Creating loops

    /// Creates a loop. Run it with ``run()`` on the thread that should own it, or use
    /// ``startOnNewThread(name:)``.
    public convenience init(name: String = "flow.loop") {
        self.init(name: name, isMainLoop: false)
    }

    private init(name: String, isMainLoop: Bool) {
        self.name = name
        self.isMainLoop = isMainLoop
        uvLoop = .allocate(capacity: 1)
        let status = uv_loop_init(uvLoop)
        precondition(status == 0, "EventLoop: uv_loop_init failed: \(EventLoop.describe(status))")
        wakeHandle = .allocate(capacity: 1)
        deadlineTimer = .allocate(capacity: 1)
        drainHandle = .allocate(capacity: 1)
        uv_async_init(uvLoop, wakeHandle) { handle in
            EventLoop.owner(of: handle).drainSubmittedWork()
        }
        uv_timer_init(uvLoop, deadlineTimer)
        uv_idle_init(uvLoop, drainHandle)
        // The wake-up handle must not keep the loop alive by itself: a program whose work is done exits.
        uv_unref(UnsafeMutableRawPointer(wakeHandle).assumingMemoryBound(to: uv_handle_t.self))
        let opaqueSelf = Unmanaged.passUnretained(self).toOpaque()
        uvLoop.pointee.data = opaqueSelf
        wakeHandle.pointee.data = opaqueSelf
        deadlineTimer.pointee.data = opaqueSelf
        drainHandle.pointee.data = opaqueSelf
    }

    /// The main thread's loop, behind ``Scheduler/main``.
    ///
    /// It runs under whichever driver the program uses: ``run()`` called on the main thread (which
    /// also runs `DispatchQueue.main` work, so `@MainActor` code works), or the Dispatch main queue
    /// (`dispatchMain()`, an `async` `@main`, a test), which the loop joins without blocking it.
    public static let main: EventLoop = {
        let loop = EventLoop(name: "flow.main", isMainLoop: true)
        loop.mainQueueEmbedding = MainQueueEmbedding(loop: loop)
        return loop
    }()

    /// Starts a loop on a new thread of its own, where it runs until ``shutdown()``.
    ///
    /// Servers that outgrow one core run one such loop per core.
    public static func startOnNewThread(name: String = "flow.loop") -> EventLoop {
        let loop = EventLoop(name: name)
        let keepAlive = loop.keepAlive(summary: "the loop's own thread runs it until shutdown()")
        let thread = LoopThread(loop: loop, keepAlive: keepAlive)
        loop.ownThread.withLock { $0 = thread }
        thread.start()
        // Return once the loop runs on its thread, so that nobody else can start running it first.
        let running = DispatchSemaphore(value: 0)
        loop.execute { running.signal() }
        running.wait()
        return loop
    }

    private let ownThread = Locked<LoopThread?>(nil)

    // MARK: Running

    /// Runs the loop on the calling thread until ``stop()`` is called or nothing is left to do: no
    /// active handle, no pending timer, no queued work, nothing kept alive with ``keepAlive(file:line:)``,
    /// and nothing on its way back to the loop.
    ///
    /// Work on its way back holds the loop until it has delivered or been cancelled: a future or signal
    /// transform's hop from the loop to another scheduler (and whatever that work hands on), the task of
    /// a future made from an `async` operation, a timer the loop's work set on another scheduler, a
    /// main-actor task waiting in ``Future/get()``, in ``perform(_:)`` or for the next element of one of
    /// the library's async sequences (FlowNet's lines, frames and chunks, a file's chunks). So a program may end with `try EventLoop.main.run()`
    /// and still see every value and task resumption that its work sent back to the main loop.
    ///
    /// - Throws: ``EventLoopError/alreadyRunning`` if another thread (or this one) is running the
    ///   loop, ``EventLoopError/closed`` after ``close()``, ``EventLoopError/mainLoopOffMainThread`` for
    ///   ``EventLoop/main`` off the main thread.
    public func run() throws(EventLoopError) {
        // The main thread counts as the main loop's context even while it is not running it: another
        // thread inside the main loop would share its libuv state with the main thread, unguarded.
        if isMainLoop, flow_is_main_thread() == 0 { throw .mainLoopOffMainThread }
        try beginRunning()
        defer { endRunning() }
        let context = ThreadContext.current
        // One scheduler for the whole run: it is what `Scheduler.current` answers in the loop's work.
        let scheduler = self.scheduler
        context.run(as: scheduler, loop: self) {
            mainQueueEmbedding?.suspend()
            attachMainQueueDrainIfOnMainThread()
            reconcileKeepAlive()
            while true {
                loopIsInsideRun = true
                uv_run(uvLoop, UV_RUN_DEFAULT)
                loopIsInsideRun = false
                if isStopRequested.exchange(false, ordering: .acquiringAndReleasing) { break }
                // libuv found nothing to wait for; work queued meanwhile must still run: the loop's
                // own, and for the main loop the main queue's (a main-actor task resumed by the last
                // callback, work submitted from another thread), which does not keep libuv alive.
                if loopMainQueueHasWork {
                    loopDrainMainQueue()
                } else if hasQueuedWork {
                    drainSubmittedWork()
                } else if !loopAwaitsPendingDeliveries() {
                    break
                }
            }
            isAwaitingDeliveries.store(false, ordering: .sequentiallyConsistent)
            detachMainQueueDrain()
            mainQueueEmbedding?.resume()
        }
    }

    /// Asks the loop to return from ``run()`` once the work it is running now is done. Callable from
    /// any thread. A stop requested while the loop is not running ends the next ``run()`` as soon as
    /// it has run the work already queued.
    public func stop() {
        isStopRequested.store(true, ordering: .releasing)
        if isInLoopContext, loopIsInsideRun {
            uv_stop(uvLoop)
        } else {
            wake()
        }
    }

    /// Keeps ``run()`` from returning for lack of work until the returned disposable is disposed (or
    /// released): for a loop that waits for work other threads will send, or a pending ``run(until:)``.
    /// Callable from any thread. ``activeResources()`` lists the token, and in debug builds where it
    /// was made.
    ///
    /// - Parameters:
    ///   - file: where the token is taken, for ``activeResources()``; the caller's file by default.
    ///   - line: the line of `file`.
    public func keepAlive(file: StaticString = #fileID, line: UInt = #line) -> Disposable {
        keepAlive(resource: LoopResource(
            kind: .keepAliveToken, summary: "not yet disposed", creationSite: LoopResource.site(file: file, line: line)))
    }

    /// A keep-alive token the library takes for its own reasons, listed with `summary`.
    func keepAlive(summary: String) -> Disposable {
        keepAlive(resource: LoopResource(kind: .keepAliveToken, summary: summary))
    }

    private func keepAlive(resource: LoopResource) -> Disposable {
        let token = rememberKeepAlive(resource)
        keepAliveCount.add(1, ordering: .relaxed)
        nudgeKeepAlive()
        return Disposer { [self] in
            forgetKeepAlive(token)
            keepAliveCount.subtract(1, ordering: .relaxed)
            nudgeKeepAlive()
        }
    }

    func nudgeKeepAlive() {
        if isInLoopContext {
            reconcileKeepAlive()
        } else {
            wake()
        }
    }

    /// References the wake-up handle while something must keep the loop alive: a ``keepAlive(file:line:)``
    /// token, or the main queue driving the main loop (where an unreferenced handle would make libuv
    /// skip polling, and "alive" does not hold the process open anyway).
    func reconcileKeepAlive() {
        let wanted = keepAliveCount.load(ordering: .relaxed) > 0 || (mainQueueEmbedding?.isDriving ?? false)
            || (isAwaitingDeliveries.load(ordering: .sequentiallyConsistent)
                && pendingDeliveryCount.load(ordering: .sequentiallyConsistent) > 0)
        guard wanted != loopIsWakeHandleReferenced, lifecycle.load(ordering: .relaxed) < Lifecycle.closed else {
            return
        }
        let handle = UnsafeMutableRawPointer(wakeHandle).assumingMemoryBound(to: uv_handle_t.self)
        if wanted { uv_ref(handle) } else { uv_unref(handle) }
        loopIsWakeHandleReferenced = wanted
    }

    private func beginRunning() throws(EventLoopError) {
        let found = leaveIdle(for: Lifecycle.running)
        guard found == Lifecycle.idle else {
            throw found == Lifecycle.running ? .alreadyRunning : .closed
        }
    }

    /// Moves the lifecycle from idle to `next`, waiting out another thread's inspection of the loop;
    /// returns what it found (`idle` when it moved).
    private func leaveIdle(for next: Int) -> Int {
        while true {
            let (exchanged, found) = lifecycle.compareExchange(
                expected: Lifecycle.idle, desired: next, ordering: .acquiringAndReleasing)
            if exchanged { return Lifecycle.idle }
            guard found == Lifecycle.inspecting else { return found }
            sched_yield()
        }
    }

    /// Runs `body` while no thread runs or closes the loop, if the loop is idle: the only way another
    /// thread may read the loop's libuv state. Returns `nil` (without running `body`) when the loop
    /// is running, closing or closed.
    func whileIdle<Value>(_ body: () -> Value) -> Value? {
        guard lifecycle.compareExchange(
            expected: Lifecycle.idle, desired: Lifecycle.inspecting, ordering: .acquiringAndReleasing
        ).exchanged else { return nil }
        defer { lifecycle.store(Lifecycle.idle, ordering: .releasing) }
        return body()
    }

    private func endRunning() {
        lifecycle.store(Lifecycle.idle, ordering: .releasing)
    }

    /// Whether the loop is inside ``run()`` right now.
    public var isRunning: Bool { lifecycle.load(ordering: .acquiring) == Lifecycle.running }

    /// Whether something drives the loop now: ``run()``, or, for ``EventLoop/main``, the Dispatch main
    /// queue (once it has run the loop). Blocking the loop's context while it is driven (waiting for a
    /// result on its own thread) stops it from producing that result. Meaningful in the loop's context.
    public var isDriven: Bool {
        if isRunning { return true }
        guard isMainLoop, let embedding = mainQueueEmbedding else { return false }
        return embedding.isDriving && embedding.hasPumped
    }

    // MARK: Submitting work

    /// Runs `job` on the loop, after the work already queued. Callable from any thread; work from one
    /// thread runs in the order submitted. Never runs `job` before returning.
    ///
    /// Submitting to a closed loop is a programming error and stops the program with a message; use
    /// ``submit(_:)`` where the loop may have been closed.
    @preconcurrency
    public func execute(_ job: @escaping @Sendable () -> Void) {
        enqueue(.closure(job))
    }

    /// Queues `work` as ``execute(_:)`` does.
    @inline(__always)
    func enqueue(_ work: consuming LoopWork) {
        if isInLoopContext {
            enqueueInLoop(work)
        } else {
            do {
                try enqueueFromOutside(work)
            } catch {
                misuseFailure("EventLoop.execute: work was submitted to the closed loop '\(name)'; it cannot run")
            }
        }
    }

    /// Runs `job` on the loop like ``execute(_:)``, or throws ``EventLoopError/closed`` if the loop
    /// was closed, in which case `job` never runs.
    @preconcurrency
    public func submit(_ job: @escaping @Sendable () -> Void) throws(EventLoopError) {
        if isInLoopContext {
            enqueueInLoop(.closure(job))
        } else {
            try enqueueFromOutside(.closure(job))
        }
    }

    @inline(__always)
    private func enqueueInLoop(_ job: consuming LoopWork) {
        loopJobs.append(job)
        if !loopIsDraining && !loopIsDrainHandleActive {
            activateDrainHandle()
        }
    }

    private func activateDrainHandle() {
        guard !loopIsDrainHandleActive, lifecycle.load(ordering: .relaxed) < Lifecycle.closed else { return }
        loopIsDrainHandleActive = true
        uv_idle_start(drainHandle) { handle in
            EventLoop.owner(of: handle).drainSubmittedWork()
        }
        mainQueueEmbedding?.loopDidChange()
    }

    private func deactivateDrainHandle() {
        guard loopIsDrainHandleActive else { return }
        loopIsDrainHandleActive = false
        uv_idle_stop(drainHandle)
    }

    /// How many of the loop's own jobs one drain runs before letting libuv poll for I/O: enough that
    /// work handed back and forth on the loop (an actor and its caller) rarely waits for a poll, few
    /// enough that a job re-queueing itself forever cannot starve I/O.
    private static let jobsPerDrain = 4096

    private func enqueueFromOutside(_ job: consuming LoopWork) throws(EventLoopError) {
        // The lock is taken by hand rather than with `withLock`, so that `job` is moved into the
        // queue, not copied and released.
        submissions.lock()
        defer { submissions.unlock() }
        guard !submissions.lockedState.isClosed else { throw EventLoopError.closed }
        submissions.lockedState.jobs.append(job)
        if isMainLoop {
            // The main loop, the main queue and the main actor are one serial context: each job from
            // another thread takes its own place in the main queue (whose order main-actor jobs share),
            // and that block runs it. Queued under the lock, so the blocks come in the jobs' order.
            flow_main_queue_async(Unmanaged.passUnretained(self).toOpaque()) { opaqueLoop in
                Unmanaged<EventLoop>.fromOpaque(opaqueLoop!).takeUnretainedValue().runNextSubmissionFromMainQueue()
            }
        } else if submissions.lockedState.jobs.count == 1 {
            // libuv coalesces wake-ups, and the drain takes everything queued: only the first job of a
            // batch wakes the loop. Sent under the lock, like `wake()`, so never after `close()`.
            uv_async_send(wakeHandle)
        }
    }

    /// Runs, as a block of the main queue, the oldest job other threads submitted to the main loop.
    ///
    /// Submissions to ``EventLoop/main`` from other threads do not wake the loop through its own
    /// handle: each is one block of `DispatchQueue.main`, so it runs where the submitting thread put it
    /// among its main-queue blocks and main-actor jobs. Whoever drives the main context runs the block:
    /// the loop's main-queue drain inside ``run()``, or Dispatch. ``close()`` runs what is left, and
    /// the blocks that come later find nothing. (The main loop lives for the whole program, so the
    /// blocks hold it unretained.)
    private func runNextSubmissionFromMainQueue() {
        submissions.lock()
        var work = submissions.lockedState.jobs.popFirst()
        submissions.unlock()
        guard work != nil else { return }
        ThreadContext.current.run(as: scheduler, loop: self) {
            // Taken out of the optional: the closure cannot consume what it captures.
            work.take()?.run(on: self)
        }
    }

    private func wake() {
        // Holding the lock orders this send before `close()` marks the queue closed and closes the
        // handle, so the handle is never used after its close.
        submissions.withLock { submissions in
            if !submissions.isClosed {
                uv_async_send(wakeHandle)
            }
        }
    }

    /// How many jobs wait to run: the loop's own and those submitted from other threads. Loop context
    /// only (the loop's own queue is not locked).
    package var queuedWorkCount: Int {
        loopJobs.count + submissions.withLock { $0.jobs.count }
    }

    /// The pending deadlines, in a few words, or `nil` when there are none. Loop context only.
    var pendingDeadlineSummary: String? {
        guard let earliest = loopDeadlines.earliest else { return nil }
        let now = uv_hrtime()
        let milliseconds = earliest.deadline > now ? (earliest.deadline - now) / 1_000_000 : 0
        let count = loopDeadlines.count
        return "\(count) pending, the next due in \(milliseconds) ms"
    }

    /// The handles the loop itself owns, whose work ``activeResources()`` reports in other terms.
    var loopOwnHandles: Set<UInt> {
        var handles: Set<UInt> = [
            UInt(bitPattern: UnsafeMutableRawPointer(wakeHandle)), UInt(bitPattern: UnsafeMutableRawPointer(deadlineTimer)),
            UInt(bitPattern: UnsafeMutableRawPointer(drainHandle)),
        ]
        if let poll = loopMainQueueDrain { handles.insert(UInt(bitPattern: UnsafeMutableRawPointer(poll))) }
        return handles
    }

    var hasQueuedWork: Bool {
        !loopJobs.isEmpty || !submissions.withLock { $0.jobs.isEmpty } || isStopRequested.load(ordering: .relaxed)
    }

    /// Whether the main queue holds blocks (main-actor jobs, work submitted to the main loop from other
    /// threads, `DispatchQueue.main` blocks): libdispatch makes its main-queue eventfd readable until
    /// they are drained. Main thread only, while the loop watches that eventfd.
    private var loopMainQueueHasWork: Bool {
        guard let poll = loopMainQueueDrain else { return false }
        if !submissions.withLock({ $0.jobs.isEmpty }) { return true }
        var descriptor = pollfd(fd: poll.pointee.io_watcher.fd, events: Int16(POLLIN), revents: 0)
        return Glibc.poll(&descriptor, 1, 0) > 0
    }

    /// Runs the main queue's blocks now, in the main loop's context.
    private func loopDrainMainQueue() {
        guard let poll = loopMainQueueDrain else { return }
        var counter: UInt64 = 0
        _ = read(poll.pointee.io_watcher.fd, &counter, MemoryLayout<UInt64>.size)
        _dispatch_main_queue_callback_4CF(nil)
    }

    /// Runs what other threads submitted, then what the loop queued for itself. Work the loop queues
    /// while this runs waits for the next turn, so a job that keeps re-queueing itself cannot starve I/O.
    ///
    /// The main loop's submissions are left to their blocks of the main queue (see
    /// `drainSubmissionsFromMainQueue`), except when closing, where everything runs now.
    private func drainSubmittedWork(includingMainQueueSubmissions: Bool = false) {
        if isStopRequested.load(ordering: .relaxed), loopIsInsideRun {
            uv_stop(uvLoop)
        }
        reconcileKeepAlive()
        loopIsDraining = true
        if !isMainLoop || includingMainQueueSubmissions {
            submissions.withLock { swap(&$0.jobs, &loopSpareBatch) }
            while let work = loopSpareBatch.popFirst() {
                work.run(on: self)
            }
        }
        var budget = EventLoop.jobsPerDrain
        while budget > 0, let work = loopJobs.popFirst() {
            work.run(on: self)
            budget -= 1
        }
        loopIsDraining = false
        if loopJobs.isEmpty {
            deactivateDrainHandle()
        } else {
            activateDrainHandle()
        }
    }

    // MARK: Deadlines

    /// Runs `job` on the loop once `delay` seconds have passed, unless the returned disposable is
    /// disposed first. Callable from any thread.
    ///
    /// Deadlines are kept in one heap driven by a single libuv timer: scheduling and cancelling are
    /// O(log n). Work due at the same time runs in the order it was scheduled. A negative delay counts
    /// as zero; a delay that is not a finite number stops the program with a message.
    @preconcurrency
    @discardableResult
    public func execute(after delay: Double, _ job: @escaping @Sendable () -> Void) -> Disposable {
        let deadline = EventLoop.deadline(after: delay, caller: "EventLoop.execute(after:)")
        return execute(atUptimeNanoseconds: deadline, job)
    }

    /// Runs `job` on the loop at `deadline`, in nanoseconds of ``EventLoop/uptimeNanoseconds``.
    @preconcurrency
    @discardableResult
    public func execute(atUptimeNanoseconds deadline: UInt64, _ job: @escaping @Sendable () -> Void) -> Disposable {
        let sequence = nextSequence.add(1, ordering: .relaxed).newValue
        let work = ScheduledWork(deadline: deadline, sequence: sequence, loop: self, job: job)
        if isInLoopContext {
            insertDeadline(work)
        } else {
            execute { [self] in insertDeadline(work) }
        }
        return work
    }

    /// The monotonic clock deadlines are measured on, in nanoseconds.
    public static var uptimeNanoseconds: UInt64 { uv_hrtime() }

    static func deadline(after delay: Double, caller: String) -> UInt64 {
        misusePrecondition(delay.isFinite, "\(caller): the delay must be a finite number of seconds, not \(delay)")
        let now = uv_hrtime()
        guard delay > 0 else { return now }
        let nanoseconds = delay * 1e9
        guard nanoseconds < Double(UInt64.max - now) else { return .max }
        return now + UInt64(nanoseconds)
    }

    private func insertDeadline(_ work: ScheduledWork) {
        guard work.state.load(ordering: .acquiring) == ScheduledWork.pending else { return }
        loopDeadlines.insert(work)
        if loopDeadlines.earliest === work {
            armDeadlineTimer()
        }
        mainQueueEmbedding?.loopDidChange()
    }

    func removeCancelledWork(_ work: ScheduledWork) {
        if isInLoopContext {
            removeDeadline(work)
        } else {
            try? submit { [self] in removeDeadline(work) }
        }
    }

    private func removeDeadline(_ work: ScheduledWork) {
        let wasEarliest = loopDeadlines.earliest === work
        loopDeadlines.remove(work)
        work.job = nil
        if wasEarliest { armDeadlineTimer() }
    }

    /// Points the libuv timer at the earliest deadline, or stops it when none is left (so pending
    /// deadlines, and only they, keep the loop alive).
    private func armDeadlineTimer() {
        // While firing, the timer is re-armed once, at the end (see `fireDueDeadlines`).
        guard !loopIsFiringDeadlines else { return }
        guard let earliest = loopDeadlines.earliest else {
            if loopArmedDeadline != .max {
                uv_timer_stop(deadlineTimer)
                loopArmedDeadline = .max
            }
            return
        }
        guard earliest.deadline != loopArmedDeadline else { return }
        loopArmedDeadline = earliest.deadline
        uv_update_time(uvLoop)
        let now = uv_hrtime()
        let remaining = earliest.deadline > now ? earliest.deadline - now : 0
        // Round up: libuv counts whole milliseconds, and firing early would only mean firing again.
        let milliseconds = (remaining + 999_999) / 1_000_000
        uv_timer_start(deadlineTimer, { handle in
            EventLoop.owner(of: handle).fireDueDeadlines()
        }, milliseconds, 0)
    }

    private func fireDueDeadlines() {
        loopArmedDeadline = .max
        loopIsFiringDeadlines = true
        let now = uv_hrtime()
        // Work scheduled while firing waits for the next turn, even when already due.
        let lastSequence = nextSequence.load(ordering: .relaxed)
        while let earliest = loopDeadlines.earliest, earliest.deadline <= now, earliest.sequence <= lastSequence {
            loopDeadlines.remove(earliest)
            let job = earliest.job
            earliest.job = nil
            if earliest.state.compareExchange(expected: ScheduledWork.pending, desired: ScheduledWork.fired,
                                              ordering: .acquiringAndReleasing).exchanged {
                job?()
            }
        }
        loopIsFiringDeadlines = false
        if let earliest = loopDeadlines.earliest, earliest.deadline <= uv_hrtime() {
            // Due already (work re-scheduled with no delay from its own callback): libuv up to 1.44
            // runs a timer restarted with timeout 0 inside its callback again in the same pass of its
            // timers, so re-arming here would fire it over and over without ever polling, and work
            // from other threads would never run. Armed from the loop's queue instead, after the
            // timers' pass: the loop polls once (without blocking: the timer is due) before it fires.
            enqueueInLoop(.closure { [self] in armDeadlineTimer() })
        } else {
            armDeadlineTimer()
        }
    }

    /// Whether `fireDueDeadlines` is running the due work (which may schedule and cancel deadlines).
    private var loopIsFiringDeadlines = false

    // MARK: Closing observers

    /// Runs `observer` in the loop's context when ``close()`` (or ``shutdown()``) begins, after the
    /// work already submitted and before pending deadlines are cancelled and the handles closed: for
    /// code waiting on a deadline that will not come (a graceful close), which can then finish its
    /// work with the handles' close callbacks still running. Loop context only; returns a number for
    /// ``forgetClosingObserver(_:)``.
    package func whenClosing(_ observer: @escaping () -> Void) -> Int {
        assertInLoopContext("EventLoop.whenClosing")
        loopNextClosingObserver += 1
        loopClosingObservers[loopNextClosingObserver] = observer
        return loopNextClosingObserver
    }

    /// Forgets an observer of ``whenClosing(_:)``. Loop context only.
    package func forgetClosingObserver(_ observer: Int) {
        loopClosingObservers[observer] = nil
    }

    private var loopClosingObservers: [Int: () -> Void] = [:]
    private var loopNextClosingObserver = 0


    // MARK: Loop context

    /// Whether the caller runs in this loop's context: on the thread running it or, for the main loop,
    /// on the main thread or the main queue.
    @inlinable
    public var isInLoopContext: Bool {
        let context = ThreadContext.current
        if let current = context.currentLoop { return current == ObjectIdentifier(self) }
        return isMainLoop && MainThread.isMainContext(context)
    }

    /// libuv's loop, for code that creates its own libuv handles on this loop (the TCP layer, for
    /// one). Use it only in the loop's context (see ``assertInLoopContext(_:file:line:)``), and give
    /// each handle an owner that lives until the handle's close callback has run.
    public var unsafeLoopPointer: UnsafeMutablePointer<uv_loop_t> {
        uvLoop
    }

    /// Stops the program with a message unless the caller runs in this loop's context: for APIs that
    /// touch libuv, which is single-threaded.
    public func assertInLoopContext(_ caller: @autoclosure () -> String = "", file: StaticString = #fileID, line: UInt = #line) {
        misusePrecondition(isInLoopContext, "\(caller()): must be called on the loop '\(name)' (its thread, or its callbacks), not from another thread", file: file, line: line)
    }

    /// Tells a loop driven by the Dispatch main queue that libuv state changed outside `uv_run`
    /// (a handle started, a timer armed), so that it runs libuv once to pick the change up. Needed only
    /// for handles created with ``unsafeLoopPointer`` on ``EventLoop/main``; harmless elsewhere.
    public func libuvStateDidChange() {
        mainQueueEmbedding?.loopDidChange()
    }

    // MARK: The main queue

    /// While the main thread runs the main loop, the loop also runs `DispatchQueue.main`'s work: it
    /// watches libdispatch's main-queue eventfd and drains the queue when it becomes readable.
    private func attachMainQueueDrainIfOnMainThread() {
        guard isMainLoop, flow_is_main_thread() != 0 else { return }
        let fd = _dispatch_get_main_queue_handle_4CF()
        let poll = UnsafeMutablePointer<uv_poll_t>.allocate(capacity: 1)
        uv_poll_init(uvLoop, poll, fd)
        poll.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_poll_start(poll, Int32(UV_READABLE.rawValue)) { handle, _, _ in
            EventLoop.owner(of: handle).loopDrainMainQueue()
        }
        // Main-queue work alone does not keep the loop running, like the wake-up handle.
        uv_unref(UnsafeMutableRawPointer(poll).assumingMemoryBound(to: uv_handle_t.self))
        loopMainQueueDrain = poll
        // Work queued before the loop started.
        loopDrainMainQueue()
    }

    private func detachMainQueueDrain() {
        guard let poll = loopMainQueueDrain else { return }
        loopMainQueueDrain = nil
        uv_close(UnsafeMutableRawPointer(poll).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            handle?.deallocate()
        }
        // Let libuv run the close callback so the memory is freed now.
        uv_run(uvLoop, UV_RUN_NOWAIT)
    }

    // MARK: Closing

    /// Closes the loop: runs the work already submitted, cancels pending deadlines, closes every libuv
    /// handle and frees the loop once their close callbacks have run. Afterwards ``execute(_:)`` stops
    /// the program with a message and ``submit(_:)`` throws ``EventLoopError/closed``.
    ///
    /// - Throws: ``EventLoopError/alreadyRunning`` while another thread runs the loop,
    ///   ``EventLoopError/closedFromInsideTheLoop`` from the loop's own work, ``EventLoopError/closed``
    ///   if already closed, ``EventLoopError/mainLoopOffMainThread`` for ``EventLoop/main`` off the main
    ///   thread and main queue.
    public func close() throws(EventLoopError) {
        if isMainLoop, !MainThread.isMainContext(ThreadContext.current) { throw .mainLoopOffMainThread }
        if isRunningItsWorkOnThisThread || (isInLoopContext && loopIsInsideRun) { throw .closedFromInsideTheLoop }
        let found = leaveIdle(for: Lifecycle.closing)
        guard found == Lifecycle.idle else {
            throw found == Lifecycle.running ? .alreadyRunning : .closed
        }
        mainQueueEmbedding?.cancel()
        ThreadContext.current.run(as: scheduler, loop: self) {
            while hasQueuedWork {
                isStopRequested.store(false, ordering: .relaxed)
                drainSubmittedWork(includingMainQueueSubmissions: true)
            }
            // In the order they were added; each may add work, which runs below.
            while let first = loopClosingObservers.min(by: { $0.key < $1.key }) {
                loopClosingObservers[first.key] = nil
                first.value()
            }
            // Work submitted before the close runs; nothing submitted is silently dropped.
            while hasQueuedWork {
                isStopRequested.store(false, ordering: .relaxed)
                drainSubmittedWork(includingMainQueueSubmissions: true)
            }
            submissions.withLock { $0.isClosed = true }
            drainSubmittedWork(includingMainQueueSubmissions: true)
            for work in loopDeadlines.removeAll() {
                work.state.store(ScheduledWork.cancelled, ordering: .releasing)
                work.job = nil
            }
            uv_walk(uvLoop, { handle, _ in
                guard let handle, uv_is_closing(handle) == 0 else { return }
                uv_close(handle, nil)
            }, nil)
            uv_run(uvLoop, UV_RUN_DEFAULT)
        }
        let status = uv_loop_close(uvLoop)
        lifecycle.store(Lifecycle.closed, ordering: .releasing)
        if status == 0 {
            uvLoop.deallocate()
            wakeHandle.deallocate()
            deadlineTimer.deallocate()
            drainHandle.deallocate()
        }
    }

    deinit {
        // Nothing can run the loop any more (running it holds a reference): release what libuv holds.
        if lifecycle.load(ordering: .acquiring) == Lifecycle.idle {
            try? close()
        }
    }

    /// Whether ``close()`` has completed.
    public var isClosed: Bool { lifecycle.load(ordering: .acquiring) == Lifecycle.closed }

    /// Stops a loop started with ``startOnNewThread(name:)``, waits for its thread to finish the work
    /// already submitted, and closes it. Callable from any thread but the loop's own, and from several
    /// at once: each call returns once the loop is closed.
    public func shutdown() {
        misusePrecondition(!isInLoopContext, "EventLoop.shutdown(): called on the loop's own thread, which would wait for itself")
        // The first call shuts the loop down; a call meanwhile waits for it to finish.
        let step = shutdownState.withLock { state -> ShutdownStep in
            switch state {
            case .notStarted:
                let thread = ownThread.withLock { thread -> LoopThread? in
                    let taken = thread
                    thread = nil
                    return taken
                }
                state = .inProgress(waiters: [])
                return .shutDown(thread)
            case .inProgress(var waiters):
                let done = DispatchSemaphore(value: 0)
                waiters.append(done)
                state = .inProgress(waiters: waiters)
                return .wait(done)
            case .done:
                return .nothing
            }
        }
        switch step {
        case .nothing:
            return
        case .wait(let done):
            done.wait()
            return
        case .shutDown(let thread):
            if let thread {
                thread.stopAndJoin()
            } else {
                stop()
            }
            defer {
                let waiters = shutdownState.withLock { state -> [DispatchSemaphore] in
                    guard case .inProgress(let waiters) = state else { return [] }
                    state = .done
                    return waiters
                }
                for waiter in waiters { waiter.signal() }
            }
            do {
                try close()
            } catch .closed {
                // Already closed: nothing left to do.
            } catch {
                misuseFailure("EventLoop.shutdown(): \(error)")
            }
        }
    }

    /// Where ``shutdown()`` is: not begun, under way (with the calls waiting for it), or done.
    private enum ShutdownState {
        case notStarted
        case inProgress(waiters: [DispatchSemaphore])
        case done
    }

    /// What one ``shutdown()`` call does.
    private enum ShutdownStep {
        case shutDown(LoopThread?)
        case wait(DispatchSemaphore)
        case nothing
    }

    private let shutdownState = Locked(ShutdownState.notStarted)

    // MARK: libuv helpers

    static func owner<Handle>(of handle: UnsafeMutablePointer<Handle>?) -> EventLoop {
        let data = UnsafeMutableRawPointer(handle!).assumingMemoryBound(to: uv_handle_t.self).pointee.data
        return Unmanaged<EventLoop>.fromOpaque(data!).takeUnretainedValue()
    }

    /// libuv's name and message for an error code, as in `ECONNREFUSED: connection refused`.
    public static func describe(_ status: Int32) -> String {
        "\(String(cString: uv_err_name(status))): \(String(cString: uv_strerror(status)))"
    }

    /// The error for a failed libuv call.
    public static func error(_ status: Int32) -> EventLoopError {
        .libuv(code: status, name: String(cString: uv_err_name(status)), message: String(cString: uv_strerror(status)))
    }
}

extension EventLoop: CustomStringConvertible {
    /// The loop's name.
    public var description: String { "EventLoop(\(name))" }
}

extension EventLoop: Equatable, Hashable {
    /// Loops are equal only to themselves.
    public static func == (lhs: EventLoop, rhs: EventLoop) -> Bool { lhs === rhs }

    /// Hashes the loop's identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
