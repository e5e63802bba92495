/// Values over time with a current value you can read: a setting, a connection count, a state.
///
/// ```swift
/// let connections: ReadSignal<Int> = server.connectionCount
/// print(connections.value)                        // the current value
/// bag += connections.atOnce().onValue { count in  // now, then on every change
///     print("\(count) connected")
/// }
/// ```
public typealias ReadSignal<Value: Sendable> = CoreSignal<Read, Value>

extension CoreSignal where Kind == Read {
    /// Creates a readable signal: `getValue` gives its current value, `onValue` its changes (called
    /// with a callback once someone listens; the disposable it returns is disposed once they stop).
    @preconcurrency
    public convenience init(
        getValue: @escaping @Sendable () -> Value, options: SignalOptions = .default,
        onValue: @escaping @Sendable (@escaping @Sendable (Value) -> Void) -> Disposable
    ) {
        self.init(getValue: getValue, options: options, producer: { callback in
            onValue { callback(.value($0)) }
        })
    }

    /// Creates a readable signal whose current value is `value`, evaluated each time it is asked for.
    @preconcurrency
    public convenience init(
        capturing value: @autoclosure @escaping @Sendable () -> Value, options: SignalOptions = .default,
        onValue: @escaping @Sendable (@escaping @Sendable (Value) -> Void) -> Disposable
    ) {
        self.init(getValue: value, options: options, onValue: onValue)
    }

    /// Creates a readable signal whose current value comes from `getValue` and whose changes are the
    /// values passed to `callbacker`.
    @preconcurrency
    public convenience init(getValue: @escaping @Sendable () -> Value, callbacker: Callbacker<Value>) {
        self.init(getValue: getValue, callbacker: callbacker, options: [], producer: { callback in
            callbacker.addCallback { callback(.value($0)) }
        })
    }

    /// Creates a readable signal whose current value is `value`, evaluated each time, and whose
    /// changes are the values passed to `callbacker`.
    ///
    /// ```swift
    /// let readSignal = ReadSignal(capturing: self.count, callbacker: countChanged)
    /// ```
    @preconcurrency
    public convenience init(
        capturing value: @autoclosure @escaping @Sendable () -> Value, callbacker: Callbacker<Value>
    ) {
        self.init(getValue: value, callbacker: callbacker)
    }

    /// Creates a readable signal whose value is always `value`.
    public convenience init(_ value: Value) {
        self.init(register: { callback in
            callback(.initial(value))
            return NilDisposer()
        })
    }
}

extension CoreSignal where Kind == Read {
    /// Creates a read-only view of a readable (or read-write) signal.
    public convenience init<S: SignalProvider>(_ signal: S) where S.Value == Value, S.Kind.DropWrite == Read {
        self.init(register: signal.providedSignal.register)
    }
}

extension SignalProvider where Kind.DropWrite == Read {
    /// The current value.
    public var value: Value { providedSignal.requiredCurrentValue() }

    /// A plain signal of the same values, without the current value.
    public func plain() -> Signal<Value> {
        Signal(self)
    }
}

extension SignalProvider where Kind == Read {
    /// A read-write signal of the same values, whose `value` setter calls `setValue`.
    ///
    /// - Parameters:
    ///   - signalOnSet: whether setting `value` also signals the new value to listeners (`false` by
    ///     default: the underlying signal is expected to signal it).
    ///   - setValue: stores the new value.
    @preconcurrency
    public func writable(
        signalOnSet: Bool = false, setValue: @escaping @Sendable (Value) -> Void
    ) -> ReadWriteSignal<Value> {
        let signal = providedSignal
        guard signalOnSet else {
            return ReadWriteSignal(setValue: setValue, register: signal.register)
        }
        let callbacker = Callbacker<Value>()
        let setSignal = Signal(callbacker: callbacker)
        return ReadWriteSignal(
            setValue: { value in
                setValue(value)
                callbacker.callAll(with: value)
            },
            register: { callback in
                let bag = DisposeBag()
                bag += signal.register(callback)
                bag += setSignal.register { eventType in
                    if case .event = eventType { callback(eventType) }
                }
                return bag
            })
    }
}
