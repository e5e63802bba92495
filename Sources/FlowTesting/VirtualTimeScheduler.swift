import Flow
import Synchronization

/// A clock that moves only when a test moves it, with schedulers that run work on its time, so that
/// time-driven code (delays, timeouts, periodic work, retries with backoff) is tested without waiting.
///
/// Give its ``scheduler`` to the code under test, then move time with ``advance(by:)-(Duration)``,
/// ``advance(to:)`` or ``runUntilIdle(maximumSteps:)`` and assert what ran:
///
/// ```swift
/// let clock = VirtualTimeScheduler()
/// let scheduler = clock.scheduler
/// let fired = Synchronization.Mutex(false)
/// scheduler.async(after: 5) { fired.withLock { $0 = true } }
/// clock.advance(by: .seconds(4))   // nothing yet
/// clock.advance(by: .seconds(1))   // runs the work, with `clock.now == .seconds(5)`
/// ```
///
/// Rules:
/// - Work enqueued without a delay is due now and runs on the next advance (even ``advance(by:)-(Duration)``
///   with `.zero`) or ``runUntilIdle(maximumSteps:)``.
/// - Work due at the same instant runs in the order it was scheduled.
/// - Advancing runs everything due up to the target, in time order, with ``now`` set to each item's due
///   time while it runs; that includes work scheduled by the work that runs during the advance.
/// - Disposing the disposable returned for delayed work removes it: it never runs.
/// - ``jump(by:)`` moves time without running anything, to play a busy scheduler or slow work: what
///   became due meanwhile runs late, at the next advance.
///
/// It is safe to schedule and cancel work from any thread. Work runs on the thread that advances the
/// clock, outside the clock's lock, so work may schedule more work or read ``now``. Drive the clock from
/// one thread at a time.
///
/// The clock owns its pending work, and its schedulers and disposables do not own the clock: when the
/// test lets go of the clock, work still pending is released without running, and work given to its
/// schedulers afterwards is dropped (nothing could ever run it). Work that captures the clock itself
/// keeps it alive until that work runs or is disposed, so run or dispose it before the test ends.
public final class VirtualTimeScheduler: Sendable {
    /// A piece of scheduled work: its place in time, and the key of its closure in `State.work`.
    private struct Entry {
        let dueTime: UInt64
        let sequence: UInt64

        func precedes(_ other: Entry) -> Bool {
            dueTime < other.dueTime || (dueTime == other.dueTime && sequence < other.sequence)
        }
    }

    private struct State {
        var uptimeNanoseconds: UInt64
        var nextSequence: UInt64 = 0
        /// A min-heap of entries by (due time, sequence). Cancelled entries stay in it until they reach
        /// the top, where they are dropped: their closures are already gone from `work`.
        var heap: [Entry] = []
        /// The closures of the work still pending, by sequence number.
        var work: [UInt64: @Sendable () -> Void] = [:]
        /// What this clock's schedulers run on, made on the first use of ``scheduler``.
        var backend: Backend?
        /// Tasks in ``waitUntilPending(atLeast:)``, by a number of their own: how much pending work
        /// each waits for, and how to resume it.
        var pendingWaiters: [UInt64: (count: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextWaiterID: UInt64 = 0
    }

    // Guarded by the mutex; work is always taken out of it and run after the lock is released.
    private let state: Locked<State>
    private let startNanoseconds: UInt64

    /// Creates a clock reading `uptimeNanoseconds` (zero by default), with nothing scheduled.
    ///
    /// ```swift
    /// let clock = VirtualTimeScheduler()
    /// ```
    public init(uptimeNanoseconds: UInt64 = 0) {
        state = Locked(State(uptimeNanoseconds: uptimeNanoseconds))
        startNanoseconds = uptimeNanoseconds
    }

    /// A `Scheduler` running its work on this clock. Schedulers of the same clock are equal, and inside
    /// the clock's work `Scheduler.current` is one of them.
    ///
    /// ```swift
    /// let scheduler = clock.scheduler
    /// scheduler.async(after: 1) { print("one virtual second later") }
    /// ```
    public var scheduler: Scheduler {
        // A new instance each time over one backend, which gives the schedulers their identity. The
        // backend holds the clock weakly: a `Scheduler` wraps the work it is given in a closure that
        // holds the scheduler, so a strong reference would tie the clock, its pending work and the
        // scheduler together for good once a test ends with work pending.
        let backend = state.withLock { state in
            if let backend = state.backend { return backend }
            let backend = Backend(clock: self)
            state.backend = backend
            return backend
        }
        return Scheduler(backend: backend)
    }

    deinit {
        // Schedulers may outlive the clock: their time stands still at its last reading.
        let (backend, reading) = state.withLock { ($0.backend, $0.uptimeNanoseconds) }
        backend?.clockEnded(at: reading)
    }

    // MARK: Reading the clock

    /// The time that has passed on this clock since it was created.
    ///
    /// ```swift
    /// clock.advance(by: .milliseconds(1500))
    /// #expect(clock.now == .milliseconds(1500))
    /// ```
    public var now: Duration {
        .nanoseconds(Int64(clamping: state.withLock { $0.uptimeNanoseconds } - startNanoseconds))
    }

    /// The clock's reading in nanoseconds: what `Scheduler.uptimeNanoseconds` answers for this
    /// clock's schedulers.
    public var uptimeNanoseconds: UInt64 {
        state.withLock { $0.uptimeNanoseconds }
    }

    /// How many pieces of work are scheduled and neither run nor cancelled yet.
    ///
    /// ```swift
    /// let timer = clock.scheduler.async(after: 1) {}
    /// #expect(clock.pendingCount == 1)
    /// timer.dispose()
    /// #expect(clock.pendingCount == 0)
    /// ```
    public var pendingCount: Int {
        state.withLock { $0.work.count }
    }

    /// Suspends until at least `count` pieces of work are pending (scheduled, neither run nor
    /// cancelled), or returns at once if they already are.
    ///
    /// It is the signal that code running on another thread or task has armed its timer, so that a test
    /// moves time only once the timer is there to fire, without sleeping or polling. The task's
    /// cancellation ends the wait early.
    ///
    /// ```swift
    /// let reading = Task { try await connection.read(timeout: 30).get() }
    /// await clock.waitUntilPending()     // the read's timer is armed
    /// clock.advance(by: 30)              // and fires
    /// ```
    public func waitUntilPending(atLeast count: Int = 1) async {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.work.count >= count || Task.isCancelled { return true }
                    state.pendingWaiters[id] = (count, continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.pendingWaiters.removeValue(forKey: id) }?.continuation.resume()
        }
    }

    /// Takes out the waiters of ``waitUntilPending(atLeast:)`` that now have the pending work they wait
    /// for, to be resumed once the lock is released.
    private static func takeSatisfiedWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        guard !state.pendingWaiters.isEmpty else { return [] }
        let pending = state.work.count
        let satisfied = state.pendingWaiters.filter { $0.value.count <= pending }
        for id in satisfied.keys { state.pendingWaiters.removeValue(forKey: id) }
        return satisfied.values.map(\.continuation)
    }

    /// When the earliest pending work is due, as time since the clock was created, or `nil` when nothing
    /// is pending.
    public var nextDueTime: Duration? {
        state.withLock { state -> UInt64? in
            dropCancelledEntries(&state)
            return state.heap.first?.dueTime
        }.map { .nanoseconds(Int64(clamping: $0 - startNanoseconds)) }
    }

    // MARK: Moving the clock

    /// Moves the clock forward by `duration`, running everything due on the way, in time order.
    ///
    /// ```swift
    /// clock.advance(by: .seconds(10))
    /// clock.advance(by: .zero)   // runs only the work that is due now
    /// ```
    public func advance(by duration: Duration) {
        let current = state.withLock { $0.uptimeNanoseconds }
        advance(toUptimeNanoseconds: VirtualTimeScheduler.adding(duration, to: current))
    }

    /// Moves the clock forward by `seconds`, running everything due on the way, in time order.
    ///
    /// ```swift
    /// clock.advance(by: 0.25)
    /// ```
    public func advance(by seconds: Double) {
        let current = state.withLock { $0.uptimeNanoseconds }
        advance(toUptimeNanoseconds: VirtualTimeScheduler.adding(seconds: seconds, to: current))
    }

    /// Moves the clock to `time` (time since the clock was created), running everything due up to it, in
    /// time order. A time in the past moves nothing but still runs the work that is due now.
    ///
    /// ```swift
    /// clock.advance(to: .seconds(60))
    /// ```
    public func advance(to time: Duration) {
        advance(toUptimeNanoseconds: VirtualTimeScheduler.adding(time, to: startNanoseconds))
    }

    /// Moves the clock to the uptime reading `target`, in nanoseconds, running everything due up to it.
    public func advance(toUptimeNanoseconds target: UInt64) {
        while let work = takeNextWork(dueBy: target) {
            work()
        }
        state.withLock { state in
            state.uptimeNanoseconds = max(state.uptimeNanoseconds, target)
        }
    }

    /// Moves the clock forward by `duration` without running anything, as if the scheduler's thread had
    /// been blocked that long. Work that became due meanwhile runs late, at the next advance, with ``now``
    /// reading the later time.
    ///
    /// Called from inside the clock's work, it plays work that takes `duration` to run:
    ///
    /// ```swift
    /// scheduler.repeatingTimer(every: 1) { clock.jump(by: .seconds(3)) }   // each tick takes 3 s
    /// ```
    public func jump(by duration: Duration) {
        state.withLock { state in
            state.uptimeNanoseconds = VirtualTimeScheduler.adding(duration, to: state.uptimeNanoseconds)
        }
    }

    /// Runs pending work in time order, moving the clock to each item's due time, until nothing is left.
    ///
    /// Work that always schedules more (a repeating timer) never lets the clock become idle: after
    /// `maximumSteps` pieces of work this returns `false` instead of running forever.
    ///
    /// ```swift
    /// scheduler.async(after: 30) { print("done") }
    /// clock.runUntilIdle()
    /// #expect(clock.now == .seconds(30))
    /// ```
    ///
    /// - Returns: `true` once nothing is pending, `false` if `maximumSteps` was reached first.
    @discardableResult
    public func runUntilIdle(maximumSteps: Int = 1_000_000) -> Bool {
        var steps = 0
        while steps < maximumSteps, let work = takeNextWork(dueBy: .max) {
            work()
            steps += 1
        }
        return pendingCount == 0
    }

    /// Takes the earliest pending work due at or before `target` out of the queue and moves the clock to
    /// its due time (never backwards).
    private func takeNextWork(dueBy target: UInt64) -> (@Sendable () -> Void)? {
        state.withLock { state in
            dropCancelledEntries(&state)
            // The clock never moves back: a target in the past still runs what is due now.
            let limit = max(target, state.uptimeNanoseconds)
            guard let earliest = state.heap.first, earliest.dueTime <= limit else { return nil }
            VirtualTimeScheduler.popEarliest(&state.heap)
            state.uptimeNanoseconds = max(state.uptimeNanoseconds, earliest.dueTime)
            return state.work.removeValue(forKey: earliest.sequence)
        }
    }

    private func dropCancelledEntries(_ state: inout State) {
        while let earliest = state.heap.first, state.work[earliest.sequence] == nil {
            VirtualTimeScheduler.popEarliest(&state.heap)
        }
    }

    // MARK: Scheduling

    /// Schedules `work` for the current instant: it runs on the next advance.
    fileprivate func enqueue(_ work: @escaping @Sendable () -> Void) {
        let satisfied = state.withLock { state in
            _ = schedule(work, at: state.uptimeNanoseconds, in: &state)
            return VirtualTimeScheduler.takeSatisfiedWaiters(&state)
        }
        for waiter in satisfied { waiter.resume() }
    }

    /// Schedules `work` `delay` seconds from now on this clock.
    ///
    /// - Returns: a disposable that removes the work if it has not run yet.
    fileprivate func enqueue(after delay: Double, _ work: @escaping @Sendable () -> Void) -> Disposable {
        let (sequence, satisfied) = state.withLock { state in
            let sequence = schedule(
                work, at: VirtualTimeScheduler.adding(seconds: delay, to: state.uptimeNanoseconds), in: &state)
            return (sequence, VirtualTimeScheduler.takeSatisfiedWaiters(&state))
        }
        for waiter in satisfied { waiter.resume() }
        return Cancellation(clock: self, sequence: sequence)
    }

    private func schedule(_ work: @escaping @Sendable () -> Void, at dueTime: UInt64, in state: inout State) -> UInt64 {
        let sequence = state.nextSequence
        state.nextSequence += 1
        state.work[sequence] = work
        VirtualTimeScheduler.insert(Entry(dueTime: dueTime, sequence: sequence), into: &state.heap)
        return sequence
    }

    private func cancel(_ sequence: UInt64) {
        let removed = state.withLock { $0.work.removeValue(forKey: sequence) }
        // Released outside the lock: the closure's captures may run deinitialisers.
        _ = removed
    }

    /// Removes one piece of scheduled work from the clock when disposed. It holds the clock weakly:
    /// work often keeps its own disposable (a timer that stops itself), and the clock keeps the work.
    private struct Cancellation: Disposable {
        weak let clock: VirtualTimeScheduler?
        let sequence: UInt64

        func dispose() { clock?.cancel(sequence) }
    }

    // MARK: Time arithmetic

    private static func adding(seconds: Double, to base: UInt64) -> UInt64 {
        misusePrecondition(!seconds.isNaN, "VirtualTimeScheduler: a delay must be a number of seconds, not NaN")
        guard seconds > 0 else { return base }
        let nanoseconds = (seconds * 1e9).rounded()
        guard nanoseconds < Double(UInt64.max - base) else { return .max }
        return base + UInt64(nanoseconds)
    }

    private static func adding(_ duration: Duration, to base: UInt64) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return base }
        let (wholeNanoseconds, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return .max }
        let nanoseconds = wholeNanoseconds + UInt64(attoseconds / 1_000_000_000)
        let (sum, sumOverflow) = base.addingReportingOverflow(nanoseconds)
        return sumOverflow ? .max : sum
    }

    // MARK: Heap

    private static func insert(_ entry: Entry, into heap: inout [Entry]) {
        heap.append(entry)
        var index = heap.count - 1
        while index > 0 {
            let parent = (index - 1) / 2
            guard heap[index].precedes(heap[parent]) else { break }
            heap.swapAt(index, parent)
            index = parent
        }
    }

    private static func popEarliest(_ heap: inout [Entry]) {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var index = 0
        while true {
            let left = 2 * index + 1
            guard left < heap.count else { break }
            let right = left + 1
            let smaller = right < heap.count && heap[right].precedes(heap[left]) ? right : left
            guard heap[smaller].precedes(heap[index]) else { break }
            heap.swapAt(index, smaller)
            index = smaller
        }
    }
}

/// The backend of a ``VirtualTimeScheduler``'s schedulers: it hands their work to the clock while the
/// clock lives, and drops it once the clock is gone, since nothing could ever advance it again.
private final class Backend: SchedulerBackend {
    weak let clock: VirtualTimeScheduler?
    /// The clock's last reading, kept when the clock is gone.
    private let finalUptimeNanoseconds = Atomic<UInt64>(0)

    init(clock: VirtualTimeScheduler) {
        self.clock = clock
    }

    func clockEnded(at uptimeNanoseconds: UInt64) {
        finalUptimeNanoseconds.store(uptimeNanoseconds, ordering: .releasing)
    }

    func enqueue(_ work: @escaping @Sendable () -> Void) {
        clock?.enqueue(work)
    }

    func runSynchronously(_ work: () -> Void) {
        work()
    }

    func enqueue(after delay: Double, _ work: @escaping @Sendable () -> Void) -> Disposable {
        clock?.enqueue(after: delay, work) ?? NilDisposer()
    }

    var uptimeNanoseconds: UInt64 {
        clock?.uptimeNanoseconds ?? finalUptimeNanoseconds.load(ordering: .acquiring)
    }
}
