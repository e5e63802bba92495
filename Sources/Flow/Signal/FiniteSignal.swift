/// Values over time that end: a download's chunks, the first few values of another signal.
///
/// ```swift
/// let chunks = FiniteSignal<String> { callback in
///     callback(.value("a"))
///     callback(.value("b"))
///     callback(.end)
///     return NilDisposer()
/// }
/// bag += chunks.onEvent { print($0) }   // value("a"), value("b"), end(nil)
/// ```
///
/// After `.end` nothing more is delivered and the producer's clean-up runs. A finite signal is a
/// recipe, like every signal: a listener that starts after an end runs the producer again (for a
/// `Callbacker`-backed one, it waits for values sent from then on).
public typealias FiniteSignal<Value: Sendable> = CoreSignal<Finite, Value>

extension CoreSignal where Kind == Finite {
    /// Creates a finite signal whose events come from `onEvent`: it is called with a callback once
    /// someone listens, and the disposable it returns is disposed once they stop or the signal ends.
    @preconcurrency
    public convenience init(
        options: SignalOptions = .default,
        onEvent: @escaping @Sendable (@escaping @Sendable (Event<Value>) -> Void) -> Disposable
    ) {
        self.init(options: options, producer: onEvent)
    }

    /// Creates a finite signal of the events passed to `callbacker`.
    public convenience init(callbacker: Callbacker<Event<Value>>) {
        self.init(options: [], producer: { callback in callbacker.addCallback(callback) })
    }

    /// Creates a finite signal that never signals nor ends.
    public convenience init() {
        self.init(register: { callback in
            callback(.initial(nil))
            return NilDisposer()
        })
    }

    /// Creates a finite signal of `signal`'s values (and its end, if it has one).
    public convenience init<S: SignalProvider>(_ signal: S) where S.Value == Value {
        let signal = signal.providedSignal
        self.init(register: { callback in
            signal.register { eventType in
                if case .initial = eventType {
                    callback(.initial(nil))
                } else {
                    callback(eventType)
                }
            }
        })
    }
}

extension SignalProvider where Kind == Finite {
    /// A plain signal of the same values, without the end.
    public func plain() -> Signal<Value> {
        Signal(self)
    }
}
