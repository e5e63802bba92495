/// Values over time, without a current value and without an end: taps, notifications, ticks.
///
/// ```swift
/// let notifications = Signal<String> { callback in
///     let observer = center.observe { callback($0) }   // called once someone listens
///     return Disposer { center.remove(observer) }      // once the last listener goes
/// }
/// bag += notifications.onValue { print($0) }
/// ```
///
/// `plain()` turns any signal into one; `readable(...)` adds a current value, `finite()` an end.
public typealias Signal<Value: Sendable> = CoreSignal<Plain, Value>

extension CoreSignal where Kind == Plain {
    /// Creates a signal whose values come from `onValue`: it is called with a callback once someone
    /// listens, and the disposable it returns is disposed once they stop.
    ///
    /// - Parameters:
    ///   - options: `.shared` (the default) lets overlapping listeners share one run of `onValue`.
    ///   - onValue: starts producing values into the callback it gets; returns the clean-up.
    @preconcurrency @inlinable
    public convenience init(
        options: SignalOptions = .default,
        onValue: @escaping @Sendable (@escaping @Sendable (Value) -> Void) -> Disposable
    ) {
        self.init(options: options, producer: { callback in
            onValue { callback(.value($0)) }
        })
    }

    /// Creates a signal of the values passed to `callbacker`'s `callAll`.
    ///
    /// ```swift
    /// let callbacker = Callbacker<Int>()
    /// let signal = Signal(callbacker: callbacker)
    /// callbacker.callAll(with: 1)   // every listener of `signal` gets 1
    /// ```
    @inlinable
    public convenience init(callbacker: Callbacker<Value>) {
        // `onValue` registers with the callbacker directly; other listeners and transforms go through
        // a gate fed by the callbacker: one closure fewer per registration than a producer.
        self.init(callbacker: callbacker, register: { callback in
            let gate = EventGate(downstream: callback)
            gate.attach(callbacker.addCallback { [gate] value in gate.send(.event(.value(value))) })
            return gate
        })
    }

    /// Creates a plain signal of `signal`'s values, without its current value or its end.
    public convenience init<S: SignalProvider>(_ signal: S) where S.Value == Value {
        let signal = signal.providedSignal
        self.init(register: { callback in
            signal.register { eventType in
                switch eventType {
                case .initial: callback(.initial(nil))
                case .event(.value): callback(eventType)
                case .event(.end): break
                }
            }
        })
    }

    /// Creates a signal that gives each listener `value` at once, and nothing more.
    public convenience init(just value: Value) {
        self.init(register: { callback in
            callback(.initial(nil))
            callback(.event(.value(value)))
            return NilDisposer()
        })
    }

    /// Creates a signal that never signals.
    public convenience init() {
        self.init(register: { callback in
            callback(.initial(nil))
            return NilDisposer()
        })
    }
}

extension SignalProvider where Kind.DropWrite == Plain {
    /// A readable signal of the same values, whose current value is what `getValue` returns.
    @preconcurrency
    public func readable(getValue: @escaping @Sendable () -> Value) -> ReadSignal<Value> {
        let signal = providedSignal
        return ReadSignal(register: { callback in
            signal.register { eventType in
                if case .initial = eventType {
                    callback(.initial(getValue()))
                } else {
                    callback(eventType)
                }
            }
        })
    }

    /// A readable signal of the same values, whose current value is `value`, evaluated each time.
    @preconcurrency
    public func readable(capturing value: @autoclosure @escaping @Sendable () -> Value) -> ReadSignal<Value> {
        readable(getValue: value)
    }

    /// A readable signal of the same values, whose current value is the last value signalled while
    /// someone listens, and `initial` otherwise.
    public func readable(initial: Value) -> ReadSignal<Value> {
        let signal = providedSignal
        let state = Locked((last: initial, listeners: 0))
        return ReadSignal(register: { callback in
            state.withLock { $0.listeners += 1 }
            let registration = signal.register { eventType in
                switch eventType {
                case .initial:
                    callback(.initial(state.withLock { $0.last }))
                case .event(.value(let value)):
                    state.withLock { $0.last = value }
                    callback(eventType)
                case .event(.end):
                    callback(eventType)
                }
            }
            return Disposer {
                registration.dispose()
                state.withLock { state in
                    state.listeners -= 1
                    if state.listeners == 0 { state.last = initial }
                }
            }
        })
    }
}

extension SignalProvider where Kind == Plain, Value == Void {
    /// A readable signal of the same values, whose current value is `()`.
    public func readable() -> ReadSignal<Void> {
        readable(getValue: {})
    }
}

extension SignalProvider where Kind.DropReadWrite == Plain {
    /// A finite signal of the same values, that never ends.
    public func finite() -> FiniteSignal<Value> {
        FiniteSignal(self)
    }
}
