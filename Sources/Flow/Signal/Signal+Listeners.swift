extension SignalProvider {
    /// Listens to the signal's events, `.initial` included: the view transforms are built on.
    ///
    /// - Returns: a disposable that stops listening; keep it (a ``DisposeBag`` is the usual place),
    ///   since letting go of it stops listening too.
    @preconcurrency @inlinable
    public func onEventType(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (EventType<Value>) -> Void
    ) -> Disposable {
        providedSignal.listen(on: scheduler, callback)
    }

    /// Runs `callback` on `scheduler` with each value signalled from now on.
    ///
    /// ```swift
    /// bag += signal.onValue { value in print(value) }
    /// ```
    ///
    /// - Returns: a disposable that stops listening; keep it (a ``DisposeBag`` is the usual place),
    ///   since letting go of it stops listening too.
    @preconcurrency @inlinable
    public func onValue(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Value) -> Void
    ) -> Disposable {
        let signal = providedSignal
        if let callbacker = signal.callbacker {
            return callbacker.addListener(on: scheduler, callback)
        }
        return signal.listen(on: scheduler) { eventType in
            if case .event(.value(let value)) = eventType { callback(value) }
        }
    }

    /// Runs `callback` with each value, disposing what the previous call returned first.
    ///
    /// ```swift
    /// bag += selectedUser.onValueDisposePrevious { user in
    ///     user.avatarSignal.onValue { show($0) }   // replaced for each new user
    /// }
    /// ```
    ///
    /// - Returns: a disposable that stops listening and disposes what the last call returned.
    @preconcurrency
    public func onValueDisposePrevious(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Value) -> Disposable?
    ) -> Disposable {
        let bag = DisposeBag()
        let previous = Locked<DisposeBag?>(bag.innerBag())
        bag += onValue(on: scheduler) { value in
            let fresh = bag.innerBag()
            let old = previous.withLock { previous in
                defer { previous = fresh }
                return previous
            }
            old?.dispose()
            fresh += callback(value)
        }
        return bag
    }

    /// Runs `callback` with the first value, then stops listening.
    ///
    /// - Returns: a disposable that stops listening if the first value has not come yet.
    @preconcurrency
    public func onFirstValue(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Value) -> Void
    ) -> Disposable {
        take(first: 1).onValue(on: scheduler, callback)
    }

    /// Runs `setValue` with each value: `onValue` that says it binds.
    @preconcurrency
    public func bindTo(
        on scheduler: Scheduler = .current, _ setValue: @escaping @Sendable (Value) -> Void
    ) -> Disposable {
        onValue(on: scheduler, setValue)
    }

    /// Sets `signal`'s value to each value signalled.
    ///
    /// ```swift
    /// bag += isValid.bindTo(isSubmitEnabled)   // isSubmitEnabled: ReadWriteSignal<Bool>
    /// ```
    public func bindTo<WriteSignal: SignalProvider>(
        on scheduler: Scheduler = .current, _ signal: WriteSignal
    ) -> Disposable where WriteSignal.Value == Value, WriteSignal.Kind == ReadWrite {
        let signal = signal.providedSignal
        return onValue(on: scheduler) { signal.value = $0 }
    }

    /// Sets `object`'s property at `keyPath` to each value signalled, on `scheduler`.
    ///
    /// ```swift
    /// bag += isValid.bindTo(button, \.isEnabled)
    /// ```
    public func bindTo<Object>(
        on scheduler: Scheduler = .current, _ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>
    ) -> Disposable {
        // The object and key path are used only on `scheduler`, where the caller chose to run the binding.
        let target = UncheckedSendable((object, keyPath))
        return onValue(on: scheduler) { value in
            let (object, keyPath) = target.value
            object[keyPath: keyPath] = value
        }
    }
}

extension SignalProvider where Kind == Finite {
    /// Runs `callback` on `scheduler` with each event: values, then the end.
    ///
    /// - Returns: a disposable that stops listening; keep it, since letting go of it stops listening too.
    @preconcurrency @inlinable
    public func onEvent(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Event<Value>) -> Void
    ) -> Disposable {
        providedSignal.listen(on: scheduler) { eventType in
            if case .event(let event) = eventType { callback(event) }
        }
    }

    /// Runs `callback` once the signal ends (with or without an error).
    @preconcurrency
    public func onEnd(on scheduler: Scheduler = .current, _ callback: @escaping @Sendable () -> Void) -> Disposable {
        onEvent(on: scheduler) { if $0.isEnd { callback() } }
    }

    /// Runs `callback` with the error if the signal ends with one.
    @preconcurrency
    public func onError(
        on scheduler: Scheduler = .current, _ callback: @escaping @Sendable (Error) -> Void
    ) -> Disposable {
        onEvent(on: scheduler) { if let error = $0.error { callback(error) } }
    }
}

extension SignalProvider where Kind == ReadWrite {
    /// Keeps this signal and `signal` equal: a value signalled by either is written to the other.
    /// `isSame` stops the echo.
    @preconcurrency
    public func bidirectionallyBindTo<WriteSignal: SignalProvider>(
        _ signal: WriteSignal, isSame: @escaping @Sendable (Value, Value) -> Bool
    ) -> Disposable where WriteSignal.Value == Value, WriteSignal.Kind == ReadWrite {
        let bag = DisposeBag()
        bag += Signal(self).distinct(isSame).bindTo(signal)
        bag += Signal(signal).distinct(isSame).bindTo(self)
        return bag
    }
}

extension SignalProvider where Kind == ReadWrite, Value: Equatable {
    /// Keeps this signal and `signal` equal: a value signalled by either is written to the other.
    public func bidirectionallyBindTo<WriteSignal: SignalProvider>(
        _ signal: WriteSignal
    ) -> Disposable where WriteSignal.Value == Value, WriteSignal.Kind == ReadWrite {
        bidirectionallyBindTo(signal, isSame: ==)
    }
}

extension SignalProvider where Value == Void {
    /// Flips `signal`'s value on each signal.
    public func toggle<WriteSignal: SignalProvider>(
        _ signal: WriteSignal
    ) -> Disposable where WriteSignal.Value == Bool, WriteSignal.Kind == ReadWrite {
        let signal = signal.providedSignal
        return onValue { _ in signal.value = !signal.value }
    }
}

/// Carries a value the compiler cannot prove Sendable into a closure that uses it only where its
/// owner said it may be used (one scheduler).
// @unchecked Sendable: no lock; each use site says why its value is used on one scheduler only, or
// why the value is immutable (a key path).
struct UncheckedSendable<Wrapped>: @unchecked Sendable {
    let value: Wrapped
    init(_ value: Wrapped) { self.value = value }
}
