import Flow

extension Scheduler {
    /// The ticks of a drift-free repeating timer on this scheduler, as an asynchronous sequence: the
    /// timer starts when iteration starts and stops when the iterating task ends or is cancelled.
    ///
    /// ```swift
    /// for await tick in Scheduler.main.ticks(every: 1) {
    ///     print("tick \(tick.number)")
    ///     if tick.number == 3 { break }
    /// }
    /// ```
    ///
    /// A consumer slower than the ticks sees only the newest one (the others were missed: see
    /// ``TimerTick/number``), so memory does not grow with the backlog.
    public func ticks(
        every interval: Double, startingAfter initialDelay: Double? = nil, missedTicks: MissedTickPolicy = .skip
    ) -> AsyncStream<TimerTick> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let timer = repeatingTimer(every: interval, startingAfter: initialDelay, missedTicks: missedTicks) { tick in
                continuation.yield(tick)
            }
            continuation.onTermination = { _ in timer.dispose() }
        }
    }
}
