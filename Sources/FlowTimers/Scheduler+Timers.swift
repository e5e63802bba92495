import Flow

extension Scheduler {
    /// Runs `work` on this scheduler once `delay` seconds have passed on its clock, unless the returned
    /// disposable is disposed first.
    ///
    /// On a loop scheduler this is one of the loop's deadlines (a heap entry driven by the loop's libuv
    /// timer); on a Dispatch scheduler, a Dispatch timer; on a virtual clock, virtual time. Callable from
    /// any thread. Disposed on the scheduler's own thread before it fired, the timer never fires.
    /// Releasing the disposable does not cancel the timer: dispose it, or add it to a ``DisposeBag``.
    ///
    /// ```swift
    /// let reminder = scheduler.timer(after: 30) { print("still there?") }
    /// // ...the user answered:
    /// reminder.dispose()
    /// ```
    ///
    /// - Parameters:
    ///   - delay: seconds to wait; a negative delay counts as zero.
    ///   - work: what to run on this scheduler.
    /// - Returns: the disposable that cancels the timer.
    @preconcurrency
    @discardableResult
    @inlinable
    public func timer(after delay: Double, execute work: @escaping @Sendable () -> Void) -> Disposable {
        // The scheduler's own delay primitive is exactly this timer on every backend (one loop deadline
        // per timer, no wrapper), so there is nothing to add.
        async(after: delay, execute: work)
    }

    /// Runs `work` on this scheduler when its clock (``Scheduler/uptimeNanoseconds``) reaches
    /// `deadline`, unless the returned disposable is disposed first. A deadline already passed runs as
    /// soon as possible.
    ///
    /// ```swift
    /// let start = scheduler.uptimeNanoseconds
    /// let check = scheduler.timer(atUptimeNanoseconds: start + 2_000_000_000) { print("two seconds after start") }
    /// ```
    ///
    /// - Returns: the disposable that cancels the timer.
    @preconcurrency
    @discardableResult
    public func timer(atUptimeNanoseconds deadline: UInt64, execute work: @escaping @Sendable () -> Void) -> Disposable {
        if let loop = eventLoop {
            return loop.execute(atUptimeNanoseconds: deadline, work)
        }
        return async(after: secondsUntil(deadline), execute: work)
    }

    /// Runs `work` on this scheduler periodically, every `interval` seconds, until the returned disposable
    /// is disposed.
    ///
    /// The schedule does not drift: tick *n* is due at start + *n* × `interval` on the scheduler's clock,
    /// however late the previous ticks ran. When a tick's due time has already passed by the time the
    /// previous tick's work returns (the scheduler was busy, or the work took longer than `interval`),
    /// `missedTicks` decides what happens; see ``MissedTickPolicy``.
    ///
    /// On a loop scheduler each tick is one of the loop's deadlines, rescheduled at an absolute time; on
    /// a Dispatch scheduler, a Dispatch timer. Callable from any thread. Once the disposable is disposed,
    /// no tick starts on the scheduler's thread any more (a tick already running on another thread
    /// finishes). Releasing the disposable does not stop the timer.
    ///
    /// ```swift
    /// let heartbeat = scheduler.repeatingTimer(every: 5) { tick in
    ///     print("heartbeat #\(tick.number)")
    /// }
    /// bag += heartbeat
    /// ```
    ///
    /// - Parameters:
    ///   - interval: seconds between ticks; must be positive and finite.
    ///   - initialDelay: seconds until the first tick; `nil` (the default) waits one `interval`.
    ///   - missedTicks: what to do about ticks whose time passed while the scheduler was busy.
    ///   - work: run on this scheduler for every tick, with the tick's number and due time.
    /// - Returns: the disposable that stops the timer.
    @preconcurrency
    public func repeatingTimer(
        every interval: Double,
        startingAfter initialDelay: Double? = nil,
        missedTicks: MissedTickPolicy = .skip,
        execute work: @escaping @Sendable (TimerTick) -> Void
    ) -> Disposable {
        misusePrecondition(interval.isFinite && interval > 0,
                     "Scheduler.repeatingTimer(every:): the interval must be a positive number of seconds, not \(interval)")
        let intervalNanoseconds = max(1, Scheduler.nanoseconds(interval))
        let firstDelay = initialDelay.map { max(0, Scheduler.nanoseconds($0)) } ?? intervalNanoseconds
        let firstDue = uptimeNanoseconds.addingSaturating(firstDelay)
        let schedule = PeriodicSchedule(
            firstDueTime: firstDue, intervalNanoseconds: intervalNanoseconds, missedTicks: missedTicks)
        let timer = RepeatingTimer(scheduler: self, schedule: schedule, work: work)
        timer.start()
        return timer
    }

    /// Runs `work` on this scheduler every `interval` seconds until the returned disposable is disposed:
    /// the form of the repeating timer above for work that does not need its ``TimerTick``.
    ///
    /// ```swift
    /// bag += scheduler.repeatingTimer(every: 60) { refreshFeed() }
    /// ```
    @preconcurrency
    public func repeatingTimer(
        every interval: Double,
        startingAfter initialDelay: Double? = nil,
        missedTicks: MissedTickPolicy = .skip,
        execute work: @escaping @Sendable () -> Void
    ) -> Disposable {
        repeatingTimer(every: interval, startingAfter: initialDelay, missedTicks: missedTicks) { _ in work() }
    }

    // MARK: Helpers

    /// Seconds from now until `deadline` on this scheduler's clock, zero if it has passed.
    func secondsUntil(_ deadline: UInt64) -> Double {
        let now = uptimeNanoseconds
        return deadline > now ? Double(deadline - now) / 1e9 : 0
    }

    /// `seconds` in whole nanoseconds, rounded to the nearest, saturating; negative gives zero.
    static func nanoseconds(_ seconds: Double) -> UInt64 {
        misusePrecondition(seconds.isFinite, "FlowTimers: a delay must be a finite number of seconds, not \(seconds)")
        guard seconds > 0 else { return 0 }
        let nanoseconds = (seconds * 1e9).rounded()
        return nanoseconds < 1.8e19 ? UInt64(nanoseconds) : .max
    }
}

extension UInt64 {
    /// The sum, or `UInt64.max` where it would overflow: deadlines far away clamp to "never".
    func addingSaturating(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
