/// Timers a transform started and has not seen fire: disposed all at once when listening stops.
// @unchecked Sendable: `timers` is a `Locked`.
final class PendingTimers: Disposable, @unchecked Sendable {
    private struct State {
        var timers: [Int: Disposable] = [:]
        var nextKey = 0
        var isDisposed = false
    }

    private let state = Locked(State())

    /// Runs `work` on `scheduler` after `delay` seconds, unless disposed first.
    func schedule(on scheduler: Scheduler, after delay: Double, _ work: @escaping @Sendable () -> Void) {
        guard let key = state.withLock({ state -> Int? in
            guard !state.isDisposed else { return nil }
            defer { state.nextKey += 1 }
            return state.nextKey
        }) else { return }
        let timer = scheduler.async(after: delay) { [weak self] in
            guard let self, self.state.withLock({ $0.timers.removeValue(forKey: key) }) != nil else { return }
            work()
        }
        let isLate = state.withLock { state -> Bool in
            guard !state.isDisposed else { return true }
            state.timers[key] = timer
            return false
        }
        if isLate { timer.dispose() }
    }

    func dispose() {
        let timers = state.withLock { state -> [Int: Disposable] in
            state.isDisposed = true
            defer { state.timers = [:] }
            return state.timers
        }
        for timer in timers.values { timer.dispose() }
    }
}

extension SignalProvider {
    /// The same events, each `delay` seconds later, on `scheduler`'s timer. `nil` delays nothing; the
    /// current value is not delayed.
    ///
    /// ```
    /// ---1---2-------3---|
    ///    delay(by: 2)
    /// -----1---2-------3---|
    /// ```
    public func delay(on scheduler: Scheduler = .current, by delay: Double? = nil) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        guard let delay else { return signal }
        guard delay >= 0, delay.isFinite else {
            misuseFailure("delay(by:): the delay must be a finite number of seconds ≥ 0, not \(delay)")
        }
        return CoreSignal(setValue: signal.setter, register: { callback in
            let timers = PendingTimers()
            let gate = EventGate(downstream: callback)
            let upstream = signal.register { eventType in
                if case .initial = eventType {
                    gate.send(eventType)
                } else {
                    timers.schedule(on: scheduler, after: delay) { gate.send(eventType) }
                }
            }
            return Disposer {
                upstream.dispose()
                timers.dispose()
                gate.close()
            }
        })
    }

    /// Each value delayed by what `delay` returns for it (`nil`: not delayed); `delay` runs on
    /// `scheduler`, and so do the timers. The end is not delayed.
    @preconcurrency
    public func delay(
        on scheduler: Scheduler = .current, by delay: @escaping @Sendable (Value) -> Double?
    ) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        return CoreSignal(setValue: signal.setter, register: { callback in
            let timers = PendingTimers()
            let gate = EventGate(downstream: callback)
            let upstream = signal.observe(on: scheduler) { eventType in
                guard case .event(.value(let value)) = eventType, let seconds = delay(value) else {
                    gate.send(eventType)
                    return
                }
                guard seconds >= 0, seconds.isFinite else {
                    misuseFailure("delay(by:): the delay must be a finite number of seconds ≥ 0, not \(seconds)")
                }
                timers.schedule(on: scheduler, after: seconds) { gate.send(eventType) }
            }
            return Disposer {
                upstream.dispose()
                timers.dispose()
                gate.close()
            }
        })
    }

    /// Each value once `delay` seconds have passed without a newer one; a newer value replaces it.
    /// The end passes at once. `nil` debounces nothing.
    ///
    /// ```
    /// 0)---1-----2-3-----4-5-6------|
    ///          debounce(2)
    /// 0)-----1-------3----------6---|
    /// ```
    public func debounce(on scheduler: Scheduler = .current, _ delay: Double?) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        guard let delay else { return signal }
        guard delay >= 0, delay.isFinite else {
            misuseFailure("debounce: the delay must be a finite number of seconds ≥ 0, not \(delay)")
        }
        return CoreSignal(setValue: signal.setter, register: { callback in
            let gate = EventGate(downstream: callback)
            let latest = Locked<(timer: Disposable?, generation: Int)>((nil, 0))
            let upstream = signal.register { eventType in
                let (previous, generation) = latest.withLock { latest -> (Disposable?, Int) in
                    defer { latest.timer = nil; latest.generation += 1 }
                    return (latest.timer, latest.generation + 1)
                }
                previous?.dispose()
                guard case .event(.value) = eventType else {
                    gate.send(eventType)
                    return
                }
                let timer = scheduler.async(after: delay) {
                    let isLatest = latest.withLock { $0.generation == generation }
                    if isLatest { gate.send(eventType) }
                }
                let stale = latest.withLock { latest -> Disposable? in
                    guard latest.generation == generation else { return timer }
                    latest.timer = timer
                    return nil
                }
                stale?.dispose()
            }
            return Disposer {
                upstream.dispose()
                let timer = latest.withLock { latest -> Disposable? in
                    defer { latest.timer = nil; latest.generation += 1 }
                    return latest.timer
                }
                timer?.dispose()
                gate.close()
            }
        })
    }

    /// The first value at once, then at most one value per `interval`: the last one signalled during
    /// the interval, at its end. `nil` throttles nothing.
    ///
    /// ```
    /// 0)---1--2---3-4----------6-7-----|
    ///         throttle(5)
    /// 0)---1----2----4---------6----7--|
    /// ```
    public func throttle(on scheduler: Scheduler = .current, _ interval: Double?) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        guard let interval else { return signal }
        guard interval >= 0, interval.isFinite else {
            misuseFailure("throttle: the interval must be a finite number of seconds ≥ 0, not \(interval)")
        }
        return CoreSignal(setValue: signal.setter, register: { callback in
            let gate = EventGate(downstream: callback)
            let timers = PendingTimers()
            let state = Locked<(isThrottling: Bool, held: Value?)>((false, nil))
            @Sendable func startInterval() {
                timers.schedule(on: scheduler, after: interval) {
                    let held = state.withLock { state -> Value? in
                        defer { state.held = nil }
                        if state.held == nil { state.isThrottling = false }
                        return state.held
                    }
                    guard let held else { return }
                    gate.send(.event(.value(held)))
                    startInterval()
                }
            }
            let upstream = signal.register { eventType in
                guard case .event(.value(let value)) = eventType else {
                    gate.send(eventType)
                    return
                }
                let passes = state.withLock { state -> Bool in
                    if state.isThrottling {
                        state.held = value
                        return false
                    }
                    state.isThrottling = true
                    return true
                }
                if passes {
                    gate.send(eventType)
                    startInterval()
                }
            }
            return Disposer {
                upstream.dispose()
                timers.dispose()
                gate.close()
            }
        })
    }
}

extension CoreSignal where Kind == Plain, Value == Void {
    /// A signal that signals every `interval` seconds, on `scheduler`'s timer (the loop's own timer
    /// for a loop scheduler), for as long as someone listens.
    ///
    /// Ticks are due at fixed times from when listening started, so they do not drift.
    ///
    /// - Parameters:
    ///   - scheduler: whose timer and clock to use; by default the scheduler current here.
    ///   - interval: the time between ticks, in seconds. Infinity: no ticks.
    ///   - delay: the time before the first tick; `interval` if `nil`.
    public convenience init(on scheduler: Scheduler = .current, every interval: Double, delay: Double? = nil) {
        guard interval >= 0 else { misuseFailure("Signal(every:): the interval must not be negative, not \(interval)") }
        self.init(options: [], producer: { callback in
            guard interval.isFinite else { return NilDisposer() }
            let timers = PendingTimers()
            let start = scheduler.uptimeNanoseconds
            let first = delay ?? interval
            let tick = Locked(0)
            @Sendable func scheduleTick() {
                let number = tick.withLock { $0 }
                let due = first + Double(number) * interval
                let elapsed = Double(scheduler.uptimeNanoseconds &- start) / 1e9
                timers.schedule(on: scheduler, after: max(0, due - elapsed)) {
                    tick.withLock { $0 += 1 }
                    callback(.value(()))
                    scheduleTick()
                }
            }
            scheduleTick()
            return timers
        })
    }

    /// A signal that signals once, `delay` seconds after someone starts listening, on `scheduler`'s
    /// timer.
    public convenience init(on scheduler: Scheduler = .current, after delay: Double) {
        self.init(options: [], producer: { callback in
            scheduler.async(after: delay) { callback(.value(())) }
        })
    }
}
