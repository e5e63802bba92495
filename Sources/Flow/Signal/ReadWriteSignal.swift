/// Values over time with a current value you can read and set; setting it signals the new value.
///
/// ```swift
/// let volume = ReadWriteSignal(5)
/// bag += volume.onValue { print("volume", $0) }
/// volume.value = 7        // prints "volume 7"
/// ```
///
/// Setting `value` from inside a callback of the same signal is allowed: `value` changes at once,
/// and the new value is delivered once the running callback has returned (never recursively).
public typealias ReadWriteSignal<Value: Sendable> = CoreSignal<ReadWrite, Value>

extension CoreSignal where Kind == ReadWrite {
    /// Creates a read-write signal holding `value`; each write stores and signals the new value.
    ///
    /// - Parameters:
    ///   - value: the initial value.
    ///   - willSet: called with the new value before it is stored and signalled.
    ///   - didSet: called with the new value after it is stored and signalled.
    @preconcurrency
    public convenience init(
        _ value: Value,
        willSet: @escaping @Sendable (Value) -> Void = { _ in },
        didSet: @escaping @Sendable (Value) -> Void = { _ in }
    ) {
        let storage = Locked(value)
        let callbacker = Callbacker<Value>()
        self.init(
            getValue: { storage.withLock { $0 } },
            setValue: { newValue in
                willSet(newValue)
                storage.withLock { $0 = newValue }
                callbacker.callAll(with: newValue)
                didSet(newValue)
            },
            callbacker: callbacker,
            options: [],
            producer: { callback in callbacker.addCallback { callback(.value($0)) } })
    }

    /// Creates a read-write signal over storage of your own: `getValue` reads it, `setValue` writes
    /// it, after which the new value is signalled.
    @preconcurrency
    public convenience init(getValue: @escaping @Sendable () -> Value, setValue: @escaping @Sendable (Value) -> Void) {
        let callbacker = Callbacker<Value>()
        self.init(
            getValue: getValue,
            setValue: { newValue in
                setValue(newValue)
                callbacker.callAll(with: newValue)
            },
            callbacker: callbacker,
            options: [],
            producer: { callback in callbacker.addCallback { callback(.value($0)) } })
    }

    /// The current value; setting it stores and signals the new value.
    public var value: Value {
        get { requiredCurrentValue() }
        set { setValueChecked(newValue) }
    }

    func setValueChecked(_ newValue: Value) {
        guard let setter else {
            misuseFailure("ReadWriteSignal.value: this signal has no setter")
        }
        setter(newValue)
    }
}

extension SignalProvider where Kind == ReadWrite {
    /// The current value; setting it stores and signals the new value.
    public var value: Value {
        get { providedSignal.value }
        nonmutating set { providedSignal.setValueChecked(newValue) }
    }

    /// A read-only view of this signal.
    public func readOnly() -> ReadSignal<Value> {
        ReadSignal(self)
    }

    /// A read-write signal that also calls `callback` on `scheduler` with each new value, just before
    /// it is written.
    @preconcurrency
    public func willWrite(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Value) -> Void
    ) -> ReadWriteSignal<Value> {
        let signal = providedSignal
        return ReadWriteSignal(
            setValue: { value in
                scheduler.async { callback(value) }
                signal.setValueChecked(value)
            },
            register: signal.register)
    }

    /// A read-write signal that also calls `callback` on `scheduler` with each new value, just after
    /// it was written.
    @preconcurrency
    public func didWrite(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Value) -> Void
    ) -> ReadWriteSignal<Value> {
        let signal = providedSignal
        return ReadWriteSignal(
            setValue: { value in
                signal.setValueChecked(value)
                scheduler.async { callback(value) }
            },
            register: signal.register)
    }
}
