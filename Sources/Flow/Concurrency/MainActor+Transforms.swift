// The `.mainActor` forms of the signal transforms, of `performWhile` and of `Scheduler.async`: each
// runs its callback on the main loop, as `on: .main` does, with a `@MainActor` type, so that Swift 6
// code can update main-actor state from it (see `MainActorScheduler`). They take `on:` with no default,
// so calls written without it, or with a `Scheduler`, keep choosing the existing forms.

extension SignalProvider {
    /// Each value transformed by main-actor `transform`, run on the main loop: as `map(on: .main)`, for
    /// a transform that reads or updates main-actor state (see ``MainActorScheduler``). A readable
    /// signal stays readable: its current value is transformed too.
    ///
    /// ```swift
    /// var seen = 0   // main-actor state
    /// let labels = counter.map(on: .mainActor) { count -> String in
    ///     seen += 1
    ///     return "\(count) of \(seen)"
    /// }
    /// ```
    @inlinable
    public func map<Output>(
        on mainActor: MainActorScheduler, _ transform: @escaping @MainActor (Value) -> Output
    ) -> CoreSignal<Kind.DropWrite, Output> {
        map(on: mainActor.scheduler) { value in
            let transfer = SameThreadTransfer(value)
            return runAsMainActor { SameThreadTransfer(transform(transfer.value)) }.value
        }
    }

    /// The values main-actor `transform` maps to something other than `nil`, run on the main loop: as
    /// `compactMap(on: .main)`, for a transform that reads or updates main-actor state (see
    /// ``MainActorScheduler``).
    ///
    /// ```swift
    /// let known = names.compactMap(on: .mainActor) { name in directory[name] }   // main-actor state
    /// ```
    @inlinable
    public func compactMap<Output>(
        on mainActor: MainActorScheduler, _ transform: @escaping @MainActor (Value) -> Output?
    ) -> CoreSignal<Kind.DropReadWrite, Output> {
        compactMap(on: mainActor.scheduler) { value in
            let transfer = SameThreadTransfer(value)
            return runAsMainActor { SameThreadTransfer(transform(transfer.value)) }.value
        }
    }

    /// The values main-actor `predicate` accepts, run on the main loop: as `filter(on: .main)`, for a
    /// predicate that reads main-actor state (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// let wanted = events.filter(on: .mainActor) { event in settings.isEnabled(event.kind) }
    /// ```
    @inlinable
    public func filter(
        on mainActor: MainActorScheduler, predicate: @escaping @MainActor (Value) -> Bool
    ) -> CoreSignal<Kind.DropReadWrite, Value> {
        filter(on: mainActor.scheduler) { value in
            let transfer = SameThreadTransfer(value)
            return runAsMainActor { predicate(transfer.value) }
        }
    }

    /// Runs main-actor `callback` with each value as it passes, on the main loop: as
    /// `atValue(on: .main)`, for a callback that updates main-actor state (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var passed = 0   // main-actor state
    /// bag += readings.atValue(on: .mainActor) { _ in passed += 1 }.onValue { store($0) }
    /// ```
    @inlinable
    public func atValue(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Value) -> Void
    ) -> CoreSignal<Kind, Value> {
        atValue(on: mainActor.scheduler) { value in
            let transfer = SameThreadTransfer(value)
            runAsMainActor { callback(transfer.value) }
        }
    }
}

extension Future {
    /// Runs main-actor `work` on the main loop while this future is pending, and disposes what it
    /// returns there once the future completes: as `performWhile(on: .main, delayBy:)`, for work that
    /// shows progress in main-actor state (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var spinnerShown = 0   // main-actor state
    /// download.performWhile(on: .mainActor, delayBy: 0.5) {
    ///     spinnerShown += 1
    ///     spinner.show()
    ///     return Disposer { spinner.hide() }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - mainActor: `.mainActor`: `work` runs on the main loop, as the main actor.
    ///   - delay: seconds to wait before running `work`; nil (the default) runs it at once.
    ///   - work: starts something on the main actor, and returns how to stop it.
    @discardableResult
    public final func performWhile(
        on mainActor: MainActorScheduler, delayBy delay: Double? = nil,
        _ work: @escaping @MainActor () -> Disposable
    ) -> Future<Value> {
        performWhile(on: mainActor.scheduler, delayBy: delay) {
            runAsMainActor { SameThreadTransfer(work()) }.value
        }
    }
}

extension MainActorScheduler {
    /// Runs main-actor `work` on the main loop: as `Scheduler.main.async`, for work that updates
    /// main-actor state. It runs at once if the caller is already executing on the main loop,
    /// otherwise later, in the order submitted.
    ///
    /// ```swift
    /// var status = ""   // main-actor state
    /// MainActorScheduler.mainActor.async { status = "ready" }
    /// ```
    public func async(execute work: @escaping @MainActor () -> Void) {
        scheduler.async {
            runAsMainActor { work() }
        }
    }

    /// Runs main-actor `work` on the main loop once `delay` seconds have passed, unless the returned
    /// disposable is disposed first: as `Scheduler.main.async(after:)`, on the main loop's timer, for
    /// work that updates main-actor state.
    ///
    /// ```swift
    /// var status = "loading"   // main-actor state
    /// let reset = MainActorScheduler.mainActor.async(after: 5) { status = "idle" }
    /// ```
    @discardableResult
    public func async(after delay: Double, execute work: @escaping @MainActor () -> Void) -> Disposable {
        scheduler.async(after: delay) {
            runAsMainActor { work() }
        }
    }
}
