import Flow

extension MainActorScheduler {
    /// Runs main-actor `work` on the main loop once `delay` seconds have passed, unless the returned
    /// disposable is disposed first: as `Scheduler.main.timer(after:execute:)`, for work that updates
    /// main-actor state.
    ///
    /// ```swift
    /// var isStillWaiting = true   // main-actor state
    /// let reminder = MainActorScheduler.mainActor.timer(after: 30) { isStillWaiting = false }
    /// ```
    ///
    /// - Returns: the disposable that cancels the timer.
    @discardableResult
    public func timer(after delay: Double, execute work: @escaping @MainActor () -> Void) -> Disposable {
        scheduler.timer(after: delay, execute: callback(work))
    }

    /// Runs main-actor `work` on the main loop every `interval` seconds until the returned disposable is
    /// disposed: as `Scheduler.main.repeatingTimer(every:startingAfter:missedTicks:execute:)`, for work
    /// that updates main-actor state.
    ///
    /// ```swift
    /// var heartbeats = 0   // main-actor state
    /// bag += MainActorScheduler.mainActor.repeatingTimer(every: 5) { tick in heartbeats = tick.number }
    /// ```
    ///
    /// - Returns: the disposable that stops the timer.
    public func repeatingTimer(
        every interval: Double,
        startingAfter initialDelay: Double? = nil,
        missedTicks: MissedTickPolicy = .skip,
        execute work: @escaping @MainActor (TimerTick) -> Void
    ) -> Disposable {
        scheduler.repeatingTimer(
            every: interval, startingAfter: initialDelay, missedTicks: missedTicks, execute: callback(work))
    }

    /// Runs main-actor `work` on the main loop every `interval` seconds until the returned disposable is
    /// disposed: the form of the repeating timer above for work that does not need its ``TimerTick``.
    ///
    /// ```swift
    /// bag += MainActorScheduler.mainActor.repeatingTimer(every: 60) { refreshCount += 1 }
    /// ```
    public func repeatingTimer(
        every interval: Double,
        startingAfter initialDelay: Double? = nil,
        missedTicks: MissedTickPolicy = .skip,
        execute work: @escaping @MainActor () -> Void
    ) -> Disposable {
        scheduler.repeatingTimer(
            every: interval, startingAfter: initialDelay, missedTicks: missedTicks, execute: callback(work))
    }
}

extension Future {
    /// `onErrorRepeat(backoff:maxRepetitions:file:line:when:onRetry:)` with a main-actor predicate and
    /// retry hook, run on the main loop, whose timer times the waits: for code that counts or shows
    /// retries in main-actor state (see `MainActorScheduler`).
    ///
    /// ```swift
    /// var status = ""   // main-actor state
    /// fetch().onErrorRepeat(on: .mainActor, backoff: .exponential(initial: 0.1, maximum: 5), maxRepetitions: 5,
    ///                       onRetry: { retry in status = "attempt \(retry.number) failed: \(retry.error)" })
    /// ```
    @discardableResult
    public final func onErrorRepeat(
        on mainActor: MainActorScheduler,
        backoff: Backoff,
        maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @MainActor (Error) -> Bool = { _ in true },
        onRetry: @escaping @MainActor (RetryAttempt) -> Void
    ) -> Future<Value> {
        onErrorRepeat(
            on: mainActor, maxRepetitions: maxRepetitions, delayBeforeRepetition: { backoff.delay(forAttempt: $0) },
            file: file, line: line, when: predicate, onRetry: onRetry)
    }
}

extension Debouncer {
    /// Creates a debouncer whose quiet period is `interval` seconds on the main loop's clock, for
    /// main-actor work: as `Debouncer(on: .main, interval:)` (see `MainActorScheduler`).
    ///
    /// ```swift
    /// let search = Debouncer<[Match]>(on: .mainActor, interval: 0.3)
    /// ```
    public convenience init(on mainActor: MainActorScheduler, interval: Double) {
        self.init(on: mainActor.scheduler, interval: interval)
    }

    /// Asks for main-actor `work` to run once no other call has come for the quiet period: as
    /// `callAsFunction(_:)`, with `work` run on the main loop as the main actor, whatever scheduler the
    /// debouncer times its quiet period on; for work that reads or updates main-actor state (see
    /// `MainActorScheduler`).
    ///
    /// ```swift
    /// var query = ""   // main-actor state
    /// search(on: .mainActor) { api.search(query) }.onValue(on: .mainActor) { matches in shown = matches }
    /// ```
    ///
    /// - Returns: a future of the result of the work that finally runs (this call's, or a later one's).
    @discardableResult
    public func callAsFunction(
        on mainActor: MainActorScheduler, _ work: @escaping @MainActor () -> Future<Value>
    ) -> Future<Value> {
        let mainActorWork = mainActor.callback(work)
        return self { Future<Void>(()).flatMap(on: mainActor.scheduler) { _ in mainActorWork() } }
    }
}
