// The `.mainActor` forms of the signal transforms, of `performWhile` and of `Scheduler.async`: each
// runs its callback on the main loop, as `on: .main` does, with a `@MainActor` type (through
// `MainActorScheduler.callback`), so that Swift 6
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
        map(on: mainActor.scheduler, mainActor.callback(transform))
    }

    /// Each value transformed by a throwing main-actor `transform`, run on the main loop: as the throwing
    /// `map(on: .main)`, for a transform that reads or updates main-actor state (see
    /// ``MainActorScheduler``). The signal ends with the error `transform` throws.
    ///
    /// ```swift
    /// let amounts = inputs.map(on: .mainActor) { text -> Int in
    ///     guard let amount = Int(text) else { throw InvalidAmount(text) }
    ///     total += amount   // main-actor state
    ///     return amount
    /// }
    /// ```
    @inlinable
    public func map<Output>(
        on mainActor: MainActorScheduler, _ transform: @escaping @MainActor (Value) throws -> Output
    ) -> FiniteSignal<Output> {
        map(on: mainActor.scheduler, mainActor.callback(transform))
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
        compactMap(on: mainActor.scheduler, mainActor.callback(transform))
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
        filter(on: mainActor.scheduler, predicate: mainActor.callback(predicate))
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
        atValue(on: mainActor.scheduler, mainActor.callback(callback))
    }
}

extension SignalProvider {
    /// The running result of main-actor `combine`, starting from `initial`, run on the main loop: as
    /// `reduce(on: .main, _:combine:)`, for a combine that reads main-actor state (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// let total = amounts.reduce(on: .mainActor, 0) { sum, amount in sum + amount * exchangeRate }
    /// ```
    @inlinable
    public func reduce<Output>(
        on mainActor: MainActorScheduler, _ initial: Output, combine: @escaping @MainActor (Output, Value) -> Output
    ) -> CoreSignal<Kind.PotentiallyRead, Output> {
        reduce(on: mainActor.scheduler, initial, combine: mainActor.callback(combine))
    }

    /// Whether any value so far satisfied main-actor `predicate`, run on the main loop: as
    /// `contains(on: .main, where:)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// let sawBlocked = users.contains(on: .mainActor) { user in blockList.contains(user) }
    /// ```
    @inlinable
    public func contains(
        on mainActor: MainActorScheduler, where predicate: @escaping @MainActor (Value) -> Bool
    ) -> CoreSignal<Kind.PotentiallyRead, Bool> {
        contains(on: mainActor.scheduler, where: mainActor.callback(predicate))
    }

    /// Whether every value so far satisfied main-actor `predicate`, run on the main loop: as
    /// `allSatisfy(on: .main, where:)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// let allKnown = users.allSatisfy(on: .mainActor) { user in directory[user] != nil }
    /// ```
    @inlinable
    public func allSatisfy(
        on mainActor: MainActorScheduler, where predicate: @escaping @MainActor (Value) -> Bool
    ) -> CoreSignal<Kind.PotentiallyRead, Bool> {
        allSatisfy(on: mainActor.scheduler, where: mainActor.callback(predicate))
    }

    /// The values from the first main-actor `predicate` accepts on, run on the main loop: as
    /// `skip(on: .main, until:)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// let afterLogin = events.skip(on: .mainActor) { _ in session.isLoggedIn }
    /// ```
    @inlinable
    public func skip(
        on mainActor: MainActorScheduler, until predicate: @escaping @MainActor (Value) -> Bool
    ) -> CoreSignal<Kind.DropReadWrite, Value> {
        skip(on: mainActor.scheduler, until: mainActor.callback(predicate))
    }

    /// The values that main-actor `isSame` finds different from the one before, run on the main loop:
    /// as `distinct(on: .main, _:)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// let changes = readings.distinct(on: .mainActor) { old, new in abs(old - new) < tolerance }
    /// ```
    @inlinable
    public func distinct(
        on mainActor: MainActorScheduler, _ isSame: @escaping @MainActor (Value, Value) -> Bool
    ) -> CoreSignal<Kind, Value> {
        distinct(on: mainActor.scheduler, mainActor.callback(isSame))
    }

    /// Each value delayed by the seconds main-actor `delay` returns for it (`nil`: not delayed), run
    /// on the main loop, whose timers time the waits: as `delay(on: .main, by:)` (see
    /// ``MainActorScheduler``).
    ///
    /// ```swift
    /// let paced = messages.delay(on: .mainActor) { message in message.isUrgent ? nil : settings.pause }
    /// ```
    @inlinable
    public func delay(
        on mainActor: MainActorScheduler, by delay: @escaping @MainActor (Value) -> Double?
    ) -> CoreSignal<Kind, Value> {
        self.delay(on: mainActor.scheduler, by: mainActor.callback(delay))
    }

    /// Runs main-actor `callback` with each value, disposing what the previous call returned first, on
    /// the main loop: as `onValueDisposePrevious(on: .main)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// bag += selectedUser.onValueDisposePrevious(on: .mainActor) { user in
    ///     user.avatarSignal.onValue(on: .mainActor) { avatar in shownAvatar = avatar }
    /// }
    /// ```
    ///
    /// - Returns: a disposable that stops listening and disposes what the last call returned.
    @inlinable
    public func onValueDisposePrevious(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Value) -> Disposable?
    ) -> Disposable {
        onValueDisposePrevious(on: mainActor.scheduler, mainActor.callback(callback))
    }
}

extension SignalProvider where Kind == Finite {
    /// Runs main-actor `callback` with each event as it passes, on the main loop: as
    /// `atEvent(on: .main)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var received = 0   // main-actor state
    /// let counted = lines.atEvent(on: .mainActor) { event in if event.value != nil { received += 1 } }
    /// ```
    @inlinable
    public func atEvent(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Event<Value>) -> Void
    ) -> FiniteSignal<Value> {
        atEvent(on: mainActor.scheduler, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` when the signal ends, as the end passes, on the main loop: as
    /// `atEnd(on: .main)` (see ``MainActorScheduler``).
    @inlinable
    public func atEnd(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor () -> Void
    ) -> FiniteSignal<Value> {
        atEnd(on: mainActor.scheduler, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` with the error when the signal ends with one, as the end passes, on
    /// the main loop: as `atError(on: .main)` (see ``MainActorScheduler``).
    @inlinable
    public func atError(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Error) -> Void
    ) -> FiniteSignal<Value> {
        atError(on: mainActor.scheduler, mainActor.callback(callback))
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
        performWhile(on: mainActor.scheduler, delayBy: delay, mainActor.callback(work))
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
        scheduler.async(execute: callback(work))
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
        scheduler.async(after: delay, execute: callback(work))
    }
}

extension SignalProvider {
    /// The values while main-actor `predicate` accepts them, ending at the first it rejects, run on the
    /// main loop: as ``take(while:)``, for a predicate that reads main-actor state (see
    /// ``MainActorScheduler``).
    ///
    /// ```swift
    /// let untilFull = uploads.take(on: .mainActor) { _ in queue.count < limit }   // main-actor state
    /// ```
    public func take(
        on mainActor: MainActorScheduler, while predicate: @escaping @MainActor (Value) -> Bool
    ) -> FiniteSignal<Value> {
        take(on: mainActor.scheduler, while: mainActor.callback(predicate))
    }

    /// For each value, the value of the future main-actor `transform` returns, run on the main loop; a
    /// new value cancels the previous future: as `mapLatestToFuture(on: .main)` (see
    /// ``MainActorScheduler``).
    ///
    /// ```swift
    /// let results = queries.mapLatestToFuture(on: .mainActor) { query in search(query, in: scope) }
    /// ```
    @inlinable
    public func mapLatestToFuture<Output>(
        on mainActor: MainActorScheduler, _ transform: @escaping @MainActor (Value) -> Future<Output>
    ) -> FiniteSignal<Output> {
        mapLatestToFuture(on: mainActor.scheduler, mainActor.callback(transform))
    }
}

extension SignalProvider where Kind == Plain {
    /// The values of the signal main-actor `transform` made from the latest value, run on the main
    /// loop; a new value disposes of the previous inner signal: as `flatMapLatest(on: .main)` (see
    /// ``MainActorScheduler``).
    ///
    /// ```swift
    /// let messages = selectedRoom.flatMapLatest(on: .mainActor) { room in rooms[room].messages }
    /// ```
    @inlinable
    public func flatMapLatest<InnerKind, Output>(
        on mainActor: MainActorScheduler, _ transform: @escaping @MainActor (Value) -> CoreSignal<InnerKind, Output>
    ) -> CoreSignal<InnerKind.DropReadWrite, Output> {
        flatMapLatest(on: mainActor.scheduler, mainActor.callback(transform))
    }
}

extension SignalProvider where Kind == Finite {
    /// The values of the signal main-actor `transform` made from the latest value, run on the main
    /// loop; a new value disposes of the previous inner signal, and the result ends when this signal
    /// or the inner one ends: as `flatMapLatest(on: .main)` (see ``MainActorScheduler``).
    @inlinable
    public func flatMapLatest<InnerKind, Output>(
        on mainActor: MainActorScheduler, _ transform: @escaping @MainActor (Value) -> CoreSignal<InnerKind, Output>
    ) -> FiniteSignal<Output> {
        flatMapLatest(on: mainActor.scheduler, mainActor.callback(transform))
    }
}

extension SignalProvider where Kind.DropWrite == Read {
    /// The values of the signal main-actor `transform` made from the latest value (the current one
    /// first), run on the main loop; a new value disposes of the previous inner signal: as
    /// `flatMapLatest(on: .main)` (see ``MainActorScheduler``).
    @inlinable
    public func flatMapLatest<InnerKind, Output>(
        on mainActor: MainActorScheduler, _ transform: @escaping @MainActor (Value) -> CoreSignal<InnerKind, Output>
    ) -> CoreSignal<InnerKind, Output> {
        flatMapLatest(on: mainActor.scheduler, mainActor.callback(transform))
    }
}

extension SignalProvider where Kind == ReadWrite {
    /// A read-write signal that also runs main-actor `callback` with each new value, on the main loop,
    /// just before it is written: as `willWrite(on: .main)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var edits = 0   // main-actor state
    /// let name = ReadWriteSignal("").willWrite(on: .mainActor) { _ in edits += 1 }
    /// ```
    @inlinable
    public func willWrite(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Value) -> Void
    ) -> ReadWriteSignal<Value> {
        willWrite(on: mainActor.scheduler, mainActor.callback(callback))
    }

    /// A read-write signal that also runs main-actor `callback` with each new value, on the main loop,
    /// just after it was written: as `didWrite(on: .main)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var saved = ""   // main-actor state
    /// let name = ReadWriteSignal("").didWrite(on: .mainActor) { saved = $0 }
    /// ```
    @inlinable
    public func didWrite(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Value) -> Void
    ) -> ReadWriteSignal<Value> {
        didWrite(on: mainActor.scheduler, mainActor.callback(callback))
    }
}

extension OrderedCallbacker {
    /// Registers main-actor `callback` at the place `orderedValue` gives it; it runs on the main loop,
    /// whatever thread calls `callAll`, and the next callback waits for the future it returns: for a
    /// callback that reads or updates main-actor state (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var unsaved = ["draft"]   // main-actor state
    /// bag += willQuit.addCallback(on: .mainActor, { _ in
    ///     save(unsaved).onValue(on: .mainActor) { unsaved = [] }.toVoid()
    /// }, orderedBy: 1)
    /// ```
    ///
    /// - Returns: a disposable that unregisters the callback.
    public func addCallback(
        on mainActor: MainActorScheduler,
        _ callback: @escaping @MainActor (CallbackValue) -> Future<Void>, orderedBy orderedValue: OrderedValue
    ) -> Disposable {
        let onTheMainActor = mainActor.callback(callback)
        return addCallback({ value -> Future<Void> in
            Future<Void>(()).flatMap(on: mainActor.scheduler) { _ in onTheMainActor(value) }
        }, orderedBy: orderedValue)
    }

    /// Registers main-actor `callback` at the place `orderedValue` gives it; it runs on the main loop,
    /// whatever thread calls `callAll`, and the next callback runs once it has returned (see
    /// ``MainActorScheduler``).
    ///
    /// - Returns: a disposable that unregisters the callback.
    public func addCallback(
        on mainActor: MainActorScheduler,
        _ callback: @escaping @MainActor (CallbackValue) -> Void, orderedBy orderedValue: OrderedValue
    ) -> Disposable {
        addCallback(on: mainActor, { value -> Future<Void> in
            callback(value)
            return Future()
        }, orderedBy: orderedValue)
    }
}
