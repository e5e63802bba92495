extension SignalProvider where Kind == Plain {
    /// The values of the signal `transform` made from the latest value; a new value disposes of the
    /// previous inner signal. Ends when the inner signal ends.
    ///
    /// ```
    /// ---a--------b------------
    ///     flatMapLatest()
    /// ---s1-------s2-----------
    /// -----1---2-----1---2--3--
    /// ```
    @preconcurrency
    public func flatMapLatest<InnerKind, Output>(
        on scheduler: Scheduler = .current, _ transform: @escaping @Sendable (Value) -> CoreSignal<InnerKind, Output>
    ) -> CoreSignal<InnerKind.DropReadWrite, Output> {
        flatMapLatestSignal(on: scheduler, transform)
    }
}

extension SignalProvider where Kind == Finite {
    /// The values of the signal `transform` made from the latest value; a new value disposes of the
    /// previous inner signal. Ends when this signal or the inner signal ends.
    @preconcurrency
    public func flatMapLatest<InnerKind, Output>(
        on scheduler: Scheduler = .current, _ transform: @escaping @Sendable (Value) -> CoreSignal<InnerKind, Output>
    ) -> FiniteSignal<Output> {
        flatMapLatestSignal(on: scheduler, transform)
    }
}

extension SignalProvider where Kind.DropWrite == Read {
    /// The values of the signal `transform` made from the latest value (the current one first); a new
    /// value disposes of the previous inner signal and signals the new inner signal's current value.
    ///
    /// ```
    /// 0)--------a---------b-------
    ///     flatMapLatest()
    /// s0)-------s1--------s2------
    /// 0)--1--2--0--1--2---0--1--2-
    /// ```
    @preconcurrency
    public func flatMapLatest<InnerKind, Output>(
        on scheduler: Scheduler = .current, _ transform: @escaping @Sendable (Value) -> CoreSignal<InnerKind, Output>
    ) -> CoreSignal<InnerKind, Output> {
        flatMapLatestSignal(on: scheduler, transform)
    }
}

extension SignalProvider {
    func flatMapLatestSignal<InnerKind, Output, OutputKind>(
        on scheduler: Scheduler, _ transform: @escaping @Sendable (Value) -> CoreSignal<InnerKind, Output>
    ) -> CoreSignal<OutputKind, Output> {
        let signal = providedSignal
        // Writing goes to the inner signal of the current value.
        let setValue: @Sendable (Output) -> Void = { value in
            guard let current = signal.currentValue(), let setter = transform(current).setter else {
                misuseFailure("flatMapLatest: the value was set, but the inner signal has no setter")
            }
            setter(value)
        }
        return CoreSignal(setValue: InnerKind.self == ReadWrite.self ? setValue : nil, register: { callback in
            let gate = EventGate(downstream: callback)
            let inner = Locked<(disposable: Disposable?, generation: Int)>((nil, 0))
            @Sendable func follow(_ innerSignal: CoreSignal<InnerKind, Output>, isFirst: Bool) {
                let generation = inner.withLock { state -> Int in
                    state.generation += 1
                    return state.generation
                }
                let registration = innerSignal.register { eventType in
                    guard inner.withLock({ $0.generation }) == generation else { return }
                    switch eventType {
                    case .initial(let value?) where OutputKind.isReadable:
                        gate.send(isFirst ? eventType : .event(.value(value)))
                    case .initial:
                        break
                    case .event:
                        gate.send(eventType)
                    }
                }
                let stale = inner.withLock { state -> Disposable? in
                    guard state.generation == generation else { return registration }
                    state.disposable = registration
                    return nil
                }
                stale?.dispose()
            }
            @Sendable func disposeInner() {
                let previous = inner.withLock { state -> Disposable? in
                    defer { state.disposable = nil; state.generation += 1 }
                    return state.disposable
                }
                previous?.dispose()
            }
            let outer = signal.observe(on: scheduler) { eventType in
                switch eventType {
                case .initial(nil):
                    gate.send(.initial(nil))
                case .initial(let value?):
                    follow(scheduler.sync { transform(value) }, isFirst: true)
                    gate.sendInitialIfNeeded()
                case .event(.value(let value)):
                    disposeInner()
                    follow(transform(value), isFirst: false)
                case .event(.end(let error)):
                    gate.send(.event(.end(error)))
                }
            }
            return Disposer {
                outer.dispose()
                disposeInner()
                gate.close()
            }
        })
    }
}
