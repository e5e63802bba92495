extension SignalProvider {
    /// The same signal with every value replaced by `()`.
    public func toVoid() -> CoreSignal<Kind.DropWrite, Void> {
        map(on: .none) { _ in }
    }

    /// The same signal, with `values` signalled first to each listener, at once.
    ///
    /// ```
    /// ?)---1----2----3--|
    ///     start(with: 5)
    /// 5----1----2----3--|
    /// ```
    public func start(with values: Value...) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        return CoreSignal(setValue: signal.setter, register: { callback in
            signal.register { eventType in
                callback(eventType)
                if case .initial = eventType {
                    for value in values { callback(.event(.value(value))) }
                }
            }
        })
    }

    /// The same signal, with overlapping listeners sharing one registration on this signal: see
    /// ``SignalOptions/shared``.
    public func shared() -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        let sharing = SharedRegistrations<Kind, Value>(register: signal.register)
        return CoreSignal(setValue: signal.setter, register: { callback in sharing.add(callback) })
    }

    /// The values `transform` turns into something; the `nil`s are dropped.
    ///
    /// ```
    /// 0)---1----2----3----4-----|
    ///   compactMap { $0.isMultiple(of: 2) ? $0 * 2 : nil }
    /// ----------4---------8-----|
    /// ```
    @preconcurrency @inlinable
    public func compactMap<Output>(
        on scheduler: Scheduler = .current, _ transform: @escaping @Sendable (Value) -> Output?
    ) -> CoreSignal<Kind.DropReadWrite, Output> {
        let signal = providedSignal
        return CoreSignal(register: { callback in
            signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial:
                    callback(.initial(nil))
                case .event(.value(let value)):
                    if let output = transform(value) { callback(.event(.value(output))) }
                case .event(.end(let error)):
                    callback(.event(.end(error)))
                }
            }
        })
    }

    /// Each value transformed by `transform`, run on `scheduler`. A readable signal stays readable:
    /// its current value is transformed too.
    ///
    /// ```
    /// 1)---2----3----4----|
    ///     map { $0 * 2 }
    /// 2)---4----6----8----|
    /// ```
    @preconcurrency @inlinable
    public func map<Output>(
        on scheduler: Scheduler = .current, _ transform: @escaping @Sendable (Value) -> Output
    ) -> CoreSignal<Kind.DropWrite, Output> {
        let signal = providedSignal
        return CoreSignal(register: { callback in
            signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial(nil): callback(.initial(nil))
                case .initial(let value?): callback(.initial(scheduler.sync { transform(value) }))
                case .event(.value(let value)): callback(.event(.value(transform(value))))
                case .event(.end(let error)): callback(.event(.end(error)))
                }
            }
        })
    }

    /// Each value transformed by a throwing `transform`; the signal ends with the error it throws.
    ///
    /// ```
    /// 1)---2----3----throw--->
    ///      map { try check($0) }
    /// -----2----3----|error
    /// ```
    @preconcurrency
    public func map<Output>(
        on scheduler: Scheduler = .current, _ transform: @escaping @Sendable (Value) throws -> Output
    ) -> FiniteSignal<Output> {
        let signal = providedSignal
        return FiniteSignal(register: { callback in
            signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial:
                    callback(.initial(nil))
                case .event(.value(let value)):
                    do {
                        callback(.event(.value(try transform(value))))
                    } catch {
                        callback(.event(.end(error)))
                    }
                case .event(.end(let error)):
                    callback(.event(.end(error)))
                }
            }
        })
    }

    /// Each value's property at `keyPath`.
    public subscript<Output>(keyPath: KeyPath<Value, Output>) -> CoreSignal<Kind.DropWrite, Output> {
        let keyPath = UncheckedSendable(keyPath)  // key paths are immutable values
        return map(on: .none) { $0[keyPath: keyPath.value] }
    }

    /// The values `predicate` accepts. A readable signal loses its current value (it may be rejected).
    ///
    /// ```
    /// 0)---1----2----3---|
    ///    filter { $0.isOdd }
    /// -----1---------3---|
    /// ```
    @preconcurrency @inlinable
    public func filter(
        on scheduler: Scheduler = .current, predicate: @escaping @Sendable (Value) -> Bool
    ) -> CoreSignal<Kind.DropReadWrite, Value> {
        compactMap(on: scheduler) { predicate($0) ? $0 : nil }
    }

    /// Runs `callback` with each value as it passes, without listening yourself.
    @preconcurrency
    public func atValue(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Value) -> Void
    ) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        return CoreSignal(setValue: signal.setter, register: { downstream in
            signal.observe(on: scheduler) { eventType in
                if case .event(.value(let value)) = eventType { callback(value) }
                downstream(eventType)
            }
        })
    }

    /// Pairs of each value with the one before it. A readable signal's current value counts as the
    /// first "before".
    ///
    /// ```
    /// ---1---2-------3-------4----|
    ///          latestTwo()
    /// -----(1,2)---(2,3)---(3,4)--|
    /// ```
    public func latestTwo() -> CoreSignal<Kind.DropReadWrite, (Value, Value)> {
        let signal = providedSignal
        return CoreSignal(register: { callback in
            let previous = Locked(PreviousValueStateMachine<Value>())
            return signal.register { eventType in
                switch eventType {
                case .initial(let value):
                    previous.withLock { $0.start(with: value) }
                    callback(.initial(nil))
                case .event(.value(let value)):
                    if let before = previous.withLock({ $0.receive(value) }) {
                        callback(.event(.value((before, value))))
                    }
                case .event(.end(let error)):
                    callback(.event(.end(error)))
                }
            }
        })
    }

    /// For each value, every value so far, in order.
    ///
    /// ```
    /// ?)--1---2-------3--------|
    ///          buffer()
    /// []--[1]--[1,2]--[1,2,3]--|
    /// ```
    public func buffer() -> CoreSignal<Kind.PotentiallyRead, [Value]> {
        reduce([]) { accumulated, value in accumulated + [value] }
    }

    /// The running result of `combine`, starting from `initial`. The result is readable (unless this
    /// signal is finite): its current value is the result so far.
    ///
    /// ```
    /// ----1---2-------3-------4----|
    ///      reduce(0, combine: +)
    /// ----1---3-------6-------10---|
    /// ```
    @preconcurrency
    public func reduce<Output>(
        on scheduler: Scheduler = .current, _ initial: Output,
        combine: @escaping @Sendable (Output, Value) -> Output
    ) -> CoreSignal<Kind.PotentiallyRead, Output> {
        let signal = providedSignal
        return CoreSignal(register: { callback in
            let accumulated = Locked(initial)
            return signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial(nil):
                    callback(.initial(initial))
                case .initial(let value?):
                    let result = combine(initial, value)
                    accumulated.withLock { $0 = result }
                    callback(.initial(result))
                case .event(.value(let value)):
                    // `combine` runs outside the lock; a listener's events arrive one at a time, so
                    // nothing writes the result between this read and the write below.
                    let result = combine(accumulated.withLock { $0 }, value)
                    accumulated.withLock { $0 = result }
                    callback(.event(.value(result)))
                case .event(.end(let error)):
                    callback(.event(.end(error)))
                }
            }
        })
    }

    /// Whether any value so far satisfied `predicate`.
    @preconcurrency
    public func contains(
        on scheduler: Scheduler = .current, where predicate: @escaping @Sendable (Value) -> Bool
    ) -> CoreSignal<Kind.PotentiallyRead, Bool> {
        reduce(on: scheduler, false) { $0 || predicate($1) }
    }

    /// Whether every value so far satisfied `predicate`.
    @preconcurrency
    public func allSatisfy(
        on scheduler: Scheduler = .current, where predicate: @escaping @Sendable (Value) -> Bool
    ) -> CoreSignal<Kind.PotentiallyRead, Bool> {
        reduce(on: scheduler, true) { $0 && predicate($1) }
    }

    /// Each value with its position, from 0.
    public func enumerate() -> CoreSignal<Kind.DropReadWrite, (Int, Value)> {
        let signal = providedSignal
        return CoreSignal(register: { callback in
            let positions = Locked(EnumerationStateMachine())
            return signal.register { eventType in
                switch eventType {
                case .initial:
                    callback(.initial(nil))
                case .event(.value(let value)):
                    let index = positions.withLock { $0.receiveValue() }
                    callback(.event(.value((index, value))))
                case .event(.end(let error)):
                    callback(.event(.end(error)))
                }
            }
        })
    }

    /// The values while `predicate` accepts them; ends at the first it rejects.
    ///
    /// ```
    /// 0)---1----2----3----4--->
    ///      take { $0 < 3 }
    /// 0)---1----2----|
    /// ```
    @preconcurrency
    public func take(while predicate: @escaping @Sendable (Value) -> Bool) -> FiniteSignal<Value> {
        take(on: .none, while: predicate)
    }

    /// ``take(while:)`` with `predicate` run on `scheduler` (``Scheduler/none``: where the value is
    /// signalled).
    func take(on scheduler: Scheduler, while predicate: @escaping @Sendable (Value) -> Bool) -> FiniteSignal<Value> {
        let signal = providedSignal
        return FiniteSignal(setValue: signal.setter, register: { callback in
            let state = Locked(TakeWhileStateMachine())
            return signal.observe(on: scheduler) { eventType in
                guard state.withLock({ $0.isTaking }) else { return }
                if case .event(.value(let value)) = eventType, !predicate(value) {
                    if state.withLock({ $0.end() }) { callback(.event(.end)) }
                    return
                }
                if eventType.isEnd, !state.withLock({ $0.end() }) { return }
                callback(eventType)
            }
        })
    }

    /// The first `count` values, then the end.
    ///
    /// ```
    /// 0)---1----2----3----4--->
    ///      take(first: 2)
    /// 0)---1----2|
    /// ```
    public func take(first count: Int) -> FiniteSignal<Value> {
        guard count >= 0 else { misuseFailure("take(first:): the count must not be negative, not \(count)") }
        let signal = providedSignal
        return FiniteSignal(setValue: signal.setter, register: { callback in
            let state = Locked(TakeFirstStateMachine(count: count))
            return signal.register { eventType in
                switch eventType {
                case .initial:
                    callback(eventType)
                    if state.withLock({ $0.didStart() }) { callback(.event(.end)) }
                case .event(.value):
                    switch state.withLock({ $0.receiveValue() }) {
                    case .pass:
                        callback(eventType)
                    case .passThenEnd:
                        callback(eventType)
                        callback(.event(.end))
                    case .drop:
                        break
                    }
                case .event(.end):
                    if state.withLock({ $0.receiveEnd() }) { callback(eventType) }
                }
            }
        })
    }

    /// The values from the first `predicate` accepts on.
    ///
    /// ```
    /// 0)---1----2----3----4---|
    ///     skip { $0 < 3 }
    /// 0)-------------3----4---|
    /// ```
    @preconcurrency
    public func skip(
        on scheduler: Scheduler = .current, until predicate: @escaping @Sendable (Value) -> Bool
    ) -> CoreSignal<Kind.DropReadWrite, Value> {
        let signal = providedSignal
        return CoreSignal(register: { callback in
            let state = Locked(SkipUntilStateMachine())
            return signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial:
                    callback(.initial(nil))
                case .event(.value(let value)):
                    if !state.withLock({ $0.isPassing }) {
                        guard predicate(value) else { return }
                        state.withLock { $0.startPassing() }
                    }
                    callback(eventType)
                case .event(.end):
                    callback(eventType)
                }
            }
        })
    }

    /// The values after the first `count`.
    ///
    /// ```
    /// ?)---1---2---3---4---|
    ///      skip(first: 2)
    /// -------------3---4---|
    /// ```
    public func skip(first count: Int) -> CoreSignal<Kind.DropReadWrite, Value> {
        let signal = providedSignal
        return CoreSignal(register: { callback in
            let state = Locked(SkipFirstStateMachine(count: count))
            return signal.register { eventType in
                switch eventType {
                case .initial:
                    callback(.initial(nil))
                case .event(.value):
                    if state.withLock({ $0.receiveValue() }) { callback(eventType) }
                case .event(.end):
                    callback(eventType)
                }
            }
        })
    }

    /// The values that differ (by `isSame`) from the one before. For a readable signal the current
    /// value counts as the one before; writing a value the same as the current one does nothing.
    ///
    /// ```
    /// ---1---2---2---2---3---|
    ///        distinct()
    /// ---1---2-----------3---|
    /// ```
    @preconcurrency
    public func distinct(
        on scheduler: Scheduler = .current, _ isSame: @escaping @Sendable (Value, Value) -> Bool
    ) -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        var setValue: (@Sendable (Value) -> Void)?
        if let setter = signal.setter {
            setValue = { @Sendable newValue in
                if let current = signal.currentValue() {
                    let unchanged: Bool = scheduler.sync { isSame(newValue, current) }
                    if unchanged { return }
                }
                setter(newValue)
            }
        }
        return CoreSignal(setValue: setValue, register: { callback in
            let previous = Locked(PreviousValueStateMachine<Value>())
            return signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial(let value):
                    previous.withLock { $0.start(with: value) }
                    callback(eventType)
                case .event(.value(let value)):
                    if let before = previous.withLock({ $0.receive(value) }), isSame(before, value) { return }
                    callback(eventType)
                case .event(.end):
                    callback(eventType)
                }
            }
        })
    }

    /// Holds values back while `readSignal` is false: the last value held (at most one) is signalled
    /// once it becomes true.
    public func wait(until readSignal: ReadSignal<Bool>) -> Signal<Value> {
        let signal = providedSignal
        return Signal(register: { callback in
            let gate = EventGate(downstream: callback)
            let state = Locked(HeldUntilOpenStateMachine<Value>())
            let bag = DisposeBag()
            bag += { gate.close() }
            bag += readSignal.atOnce().register { eventType in
                guard case .event(.value(let isOpen)) = eventType,
                      let released = state.withLock({ $0.gateChanged(isOpen: isOpen) })
                else { return }
                gate.send(.event(.value(released)))
            }
            bag += signal.register { eventType in
                switch eventType {
                case .initial:
                    gate.send(.initial(nil))
                case .event(.value(let value)):
                    if let passing = state.withLock({ $0.receive(value) }) {
                        gate.send(.event(.value(passing)))
                    }
                case .event(.end):
                    break
                }
            }
            gate.sendInitialIfNeeded()
            return bag
        })
    }
}

extension SignalProvider where Kind == Finite {
    /// Runs `callback` with each event as it passes.
    @preconcurrency
    public func atEvent(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Event<Value>) -> Void
    ) -> FiniteSignal<Value> {
        let signal = providedSignal
        return FiniteSignal(setValue: signal.setter, register: { downstream in
            signal.observe(on: scheduler) { eventType in
                if case .event(let event) = eventType { callback(event) }
                downstream(eventType)
            }
        })
    }

    /// Runs `callback` when the signal ends, as the end passes.
    @preconcurrency
    public func atEnd(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable () -> Void
    ) -> FiniteSignal<Value> {
        atEvent(on: scheduler) { if $0.isEnd { callback() } }
    }

    /// Runs `callback` with the error when the signal ends with one, as the end passes.
    @preconcurrency
    public func atError(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Error) -> Void
    ) -> FiniteSignal<Value> {
        atEvent(on: scheduler) { if let error = $0.error { callback(error) } }
    }

    /// Every value, as one array, when the signal ends.
    ///
    /// ```
    /// ---1---2---3---|
    ///     collect()
    /// ---------------[1, 2, 3]|
    /// ```
    public func collect() -> FiniteSignal<[Value]> {
        let signal = providedSignal
        return FiniteSignal(register: { callback in
            let values = Locked(CollectionStateMachine<Value>())
            return signal.register { eventType in
                switch eventType {
                case .initial:
                    callback(.initial(nil))
                case .event(.value(let value)):
                    values.withLock { $0.receive(value) }
                case .event(.end(let error)):
                    callback(.event(.value(values.withLock { $0.finish() })))
                    callback(.event(.end(error)))
                }
            }
        })
    }
}

extension SignalProvider where Kind.DropWrite == Read {
    /// The same signal, with its current value signalled first to each listener, at once.
    ///
    /// ```
    /// 1)---2----3----4--|
    ///      atOnce()
    /// 1----2----3----4--|
    /// ```
    public func atOnce() -> CoreSignal<Kind, Value> {
        let signal = providedSignal
        return CoreSignal(setValue: signal.setter, register: { callback in
            signal.register { eventType in
                callback(eventType)
                if case .initial(let value?) = eventType { callback(.event(.value(value))) }
            }
        })
    }
}

extension SignalProvider where Kind == Plain, Value == Void {
    /// The same signal, starting with a `()` at once: `start(with: ())`.
    public func atOnce() -> Signal<Void> { start(with: ()) }
}

extension SignalProvider where Kind == Finite, Value == Void {
    /// The same signal, starting with a `()` at once: `start(with: ())`.
    public func atOnce() -> FiniteSignal<Void> { start(with: ()) }
}

extension SignalProvider where Value == Bool {
    /// Each value negated.
    public func negate() -> CoreSignal<Kind.DropWrite, Bool> {
        map(on: .none) { !$0 }
    }
}

extension SignalProvider where Kind == ReadWrite, Value == Bool {
    /// Flips the current value.
    public func toggle() {
        value = !value
    }
}

extension SignalProvider where Value: Equatable {
    /// The values that differ from the one before (see ``distinct(on:_:)-(Scheduler,_)``).
    public func distinct(on scheduler: Scheduler = .current) -> CoreSignal<Kind, Value> {
        distinct(on: scheduler, ==)
    }
}

extension SignalProvider where Kind == ReadWrite {
    /// A read-write signal of the property at `keyPath`: writing it writes the whole value back.
    public subscript<Part>(keyPath: WritableKeyPath<Value, Part>) -> ReadWriteSignal<Part> {
        let signal = providedSignal
        let keyPath = UncheckedSendable(keyPath)  // key paths are immutable values
        let parts = signal.map(on: .none) { $0[keyPath: keyPath.value] }
        return ReadWriteSignal(
            setValue: { part in
                var whole = signal.value
                whole[keyPath: keyPath.value] = part
                signal.value = whole
            },
            register: parts.register)
    }

    /// A read-write signal of the optional property at `keyPath`, reading `defaultValue` where it is
    /// `nil`: writing it writes the whole value back.
    ///
    /// ```swift
    /// let nickname = profile[\.nickname, default: "anonymous"]   // profile: ReadWriteSignal<Profile>
    /// ```
    public subscript<Part>(
        keyPath: WritableKeyPath<Value, Part?>, default defaultValue: @autoclosure @escaping @Sendable () -> Part
    ) -> ReadWriteSignal<Part> {
        let signal = providedSignal
        let keyPath = UncheckedSendable(keyPath)  // key paths are immutable values
        let parts = signal.map(on: .none) { $0[keyPath: keyPath.value] ?? defaultValue() }
        return ReadWriteSignal(
            setValue: { part in
                var whole = signal.value
                whole[keyPath: keyPath.value] = part
                signal.value = whole
            },
            register: parts.register)
    }
}
