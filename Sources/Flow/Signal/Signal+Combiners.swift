/// Every value of every signal in `signals`, as they come. Readable signals give the first one's
/// current value. Ends when all have ended, or at once when one ends with an error.
///
/// ```
/// a)---b---c------d-|
/// 0)----------1------2---|
///        merge()
/// a)---b---c--1---d--2---|
/// ```
public func merge<Signals: Sequence>(
    _ signals: Signals
) -> CoreSignal<Signals.Element.Kind.DropWrite, Signals.Element.Value> where Signals.Element: SignalProvider {
    let signals = signals.map { $0.providedSignal }
    let count = signals.count
    return CoreSignal(register: { callback in
        let gate = EventGate(downstream: callback)
        let endCount = Locked(0)
        let bag = DisposeBag()
        bag += { gate.close() }
        for signal in signals {
            bag += signal.register { eventType in
                if case .event(.end(nil)) = eventType {
                    let allEnded = endCount.withLock { ended -> Bool in
                        ended += 1
                        return ended == count
                    }
                    guard allEnded else { return }
                }
                gate.send(eventType)  // the gate keeps the first `.initial` only
            }
        }
        gate.sendInitialIfNeeded()
        return bag
    })
}

/// Every value of every signal given, as they come: see ``merge(_:)->CoreSignal<Signals.Element.Kind.DropWrite,Signals.Element.Value>``.
public func merge<S: SignalProvider>(_ signals: S...) -> CoreSignal<S.Kind.DropWrite, S.Value> {
    merge(signals)
}

/// The latest value of each signal in `signals`, as an array, each time one of them signals (once
/// each has signalled). Readable signals give the combined current values. Ends when one ends.
public func combineLatest<Signals: Sequence>(
    _ signals: Signals
) -> CoreSignal<Signals.Element.Kind.DropWrite, [Signals.Element.Value]> where Signals.Element: SignalProvider {
    let signals = signals.map { $0.providedSignal }
    guard !signals.isEmpty else {
        return CoreSignal(register: { callback in
            callback(.initial([]))
            return NilDisposer()
        })
    }
    return CoreSignal(register: LatestValues.combining(signals.map { signal in signal.register }))
}

/// The engine of `combineLatest`: a registration combining inputs of one value type into arrays of
/// their latest values.
enum LatestValues<Value: Sendable> {
    typealias Register = @Sendable (@escaping @Sendable (EventType<Value>) -> Void) -> Disposable

    /// A registration function combining the inputs `registers` into arrays of their latest values.
    static func combining(
        _ registers: [Register]
    ) -> @Sendable (@escaping @Sendable (EventType<[Value]>) -> Void) -> Disposable {
        { callback in
            let gate = EventGate(downstream: callback)
            let state = Locked(LatestValuesStateMachine<Value>(inputCount: registers.count))
            let bag = DisposeBag()
            bag += { gate.close() }
            for (index, register) in registers.enumerated() {
                bag += register { eventType in
                    switch eventType {
                    case .initial(let value):
                        if case .sendInitial(let combined) = state.withLock({ $0.receiveInitial(value, at: index) }) {
                            gate.send(.initial(combined))
                        }
                    case .event(.value(let value)):
                        if let combined = state.withLock({ $0.receiveValue(value, at: index) }) {
                            gate.send(.event(.value(combined)))
                        }
                    case .event(.end):
                        gate.send(eventType.map { _ in [] })
                    }
                }
            }
            return bag
        }
    }
}

/// The latest value of each input of one `combineLatest` registration, without threads, locks or
/// signals: each event returns the array to send, if any, which the registration sends after the
/// lock is released.
struct LatestValuesStateMachine<Value> {
    /// What to do after an input's initial event.
    enum InitialAction {
        /// Other inputs' initial events are still to come.
        case wait
        /// Every input gave its initial event: send the combined initial value (`nil` unless each input
        /// has a value).
        case sendInitial([Value]?)
    }

    private var latest: [Value?]
    private var initialsLeft: Int

    init(inputCount: Int) {
        latest = Array(repeating: nil, count: inputCount)
        initialsLeft = inputCount
    }

    /// Input `index` gave its initial event, with its current value if it is readable.
    mutating func receiveInitial(_ value: Value?, at index: Int) -> InitialAction {
        if let value { latest[index] = value }
        initialsLeft -= 1
        return initialsLeft == 0 ? .sendInitial(combined()) : .wait
    }

    /// Input `index` signalled `value`.
    ///
    /// - Returns: the latest value of each input, once each has one.
    mutating func receiveValue(_ value: Value, at index: Int) -> [Value]? {
        latest[index] = value
        return combined()
    }

    private func combined() -> [Value]? {
        let values = latest.compactMap { $0 }
        return values.count == latest.count ? values : nil
    }
}

extension LatestValuesStateMachine: Sendable where Value: Sendable {}
extension LatestValuesStateMachine.InitialAction: Sendable where Value: Sendable {}

/// A signal's events with the value erased, for the combiners of many signals of different types.
func erasedRegister<Kind, Value>(_ signal: CoreSignal<Kind, Value>) -> LatestValues<any Sendable>.Register {
    { callback in signal.register { eventType in callback(eventType.map { $0 as any Sendable }) } }
}

extension SignalProvider {
    /// Each value paired with the latest value of `other` (values before `other` has one are dropped).
    ///
    /// ```
    /// a)---------b------c-----d--|
    /// 0)------1------2-----------|
    ///        withLatestFrom()
    /// (a,0)----(b,1)--(c,2)-(d,2)|
    /// ```
    public func withLatestFrom<Other: SignalProvider>(
        _ other: Other
    ) -> CoreSignal<Kind.DropWrite, (Value, Other.Value)> where Kind.DropWrite == Other.Kind.DropWrite {
        let signal = providedSignal
        let otherSignal = other.providedSignal
        return CoreSignal(register: { callback in
            let gate = EventGate(downstream: callback)
            let latest = Locked<Other.Value?>(nil)
            let bag = DisposeBag()
            bag += { gate.close() }
            bag += otherSignal.register { eventType in
                switch eventType {
                case .initial(let value):
                    if let value { latest.withLock { $0 = value } }
                case .event(.value(let value)):
                    latest.withLock { $0 = value }
                case .event(.end(let error)):
                    if let error { gate.send(.event(.end(error))) }
                }
            }
            bag += signal.register { eventType in
                let other = latest.withLock { $0 }
                switch eventType {
                case .initial(let value):
                    if let value, let other {
                        gate.send(.initial((value, other)))
                    } else {
                        gate.send(.initial(nil))
                    }
                case .event(.value(let value)):
                    if let other { gate.send(.event(.value((value, other)))) }
                case .event(.end(let error)):
                    gate.send(.event(.end(error)))
                }
            }
            return bag
        })
    }
}

extension SignalProvider where Kind == Plain, Value == Void {
    /// The latest value of `other` each time this signal signals.
    ///
    /// ```
    /// ----*------*------*-----*--|
    /// a)------b------c-----------|
    ///       withLatestFrom()
    /// a)--a------b------c-----c--|
    /// ```
    public func withLatestFrom<Other: SignalProvider>(
        _ other: Other
    ) -> ReadSignal<Other.Value> where Other.Kind.DropWrite == Read {
        readable().withLatestFrom(other).map(on: .none) { $1 }
    }

    /// The latest values of `a` and `b` each time this signal signals.
    public func withLatestFrom<A: SignalProvider, B: SignalProvider>(
        _ a: A, _ b: B
    ) -> ReadSignal<(A.Value, B.Value)> where A.Kind.DropWrite == Read, B.Kind.DropWrite == Read {
        withLatestFrom(combineLatest(a, b))
    }

    /// The latest values of `a`, `b` and `c` each time this signal signals.
    public func withLatestFrom<A: SignalProvider, B: SignalProvider, C: SignalProvider>(
        _ a: A, _ b: B, _ c: C
    ) -> ReadSignal<(A.Value, B.Value, C.Value)>
    where A.Kind.DropWrite == Read, B.Kind.DropWrite == Read, C.Kind.DropWrite == Read {
        withLatestFrom(combineLatest(a, b, c))
    }

    /// The latest values of `a`, `b`, `c` and `d` each time this signal signals.
    public func withLatestFrom<A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider>(
        _ a: A, _ b: B, _ c: C, _ d: D
    ) -> ReadSignal<(A.Value, B.Value, C.Value, D.Value)>
    where A.Kind.DropWrite == Read, B.Kind.DropWrite == Read, C.Kind.DropWrite == Read, D.Kind.DropWrite == Read {
        withLatestFrom(combineLatest(a, b, c, d))
    }

    /// The latest values of `a` to `e` each time this signal signals.
    public func withLatestFrom<
        A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider
    >(
        _ a: A, _ b: B, _ c: C, _ d: D, _ e: E
    ) -> ReadSignal<(A.Value, B.Value, C.Value, D.Value, E.Value)>
    where A.Kind.DropWrite == Read, B.Kind.DropWrite == Read, C.Kind.DropWrite == Read, D.Kind.DropWrite == Read,
        E.Kind.DropWrite == Read {
        withLatestFrom(combineLatest(a, b, c, d, e))
    }

    /// The latest values of `a` to `f` each time this signal signals.
    public func withLatestFrom<
        A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider,
        F: SignalProvider
    >(
        _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F
    ) -> ReadSignal<(A.Value, B.Value, C.Value, D.Value, E.Value, F.Value)>
    where A.Kind.DropWrite == Read, B.Kind.DropWrite == Read, C.Kind.DropWrite == Read, D.Kind.DropWrite == Read,
        E.Kind.DropWrite == Read, F.Kind.DropWrite == Read {
        withLatestFrom(combineLatest(a, b, c, d, e, f))
    }
}
