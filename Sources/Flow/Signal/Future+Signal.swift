extension SignalProvider {
    /// A future of the first value signalled; it fails if the signal ends first (with the signal's
    /// error, or ``FutureError/aborted`` for an end without one). Cancelling it stops listening.
    ///
    /// ```swift
    /// let firstConnection = server.connections.future
    /// ```
    public var future: Future<Value> {
        let signal = providedSignal
        return Future { completion in
            signal.listen(on: .none) { eventType in
                switch eventType {
                case .initial: break
                case .event(.value(let value)): completion(.success(value))
                case .event(.end(let error)): completion(.failure(error ?? FutureError.aborted))
                }
            }
        }
    }

    /// For each value, the value of the future `transform` returns; a new value cancels the previous
    /// future. Ends with the error of a future that fails.
    @preconcurrency
    public func mapLatestToFuture<Output>(
        on scheduler: Scheduler = .current, _ transform: @escaping @Sendable (Value) -> Future<Output>
    ) -> FiniteSignal<Output> {
        FiniteSignal(self).flatMapLatest(on: scheduler) { value in
            transform(value).valueSignal
        }
    }
}

extension Future {
    /// Creates a future that completes with the first result passed to `callbacker`'s `callAll`
    /// from now on; it stops listening to the callbacker once completed or cancelled.
    ///
    /// ```swift
    /// let loginFinished = Callbacker<Result<Session>>()
    /// let session = Future(callbacker: loginFinished)
    /// loginFinished.callAll(with: .success(session))   // completes `session`
    /// ```
    public convenience init(
        callbacker: Callbacker<Result<Value>>, file: StaticString = #fileID, line: UInt = #line
    ) {
        self.init(file: file, line: line) { completion in
            callbacker.addCallback(completion)
        }
    }

    /// A signal of the future's result, once it completes. Listening does not keep the future from
    /// being cancelled by others; the last listener leaving cancels it if no one else observes it.
    public var resultSignal: Signal<Result<Value>> {
        Signal(options: []) { callback in
            self.onResult(on: .none) { callback($0) }.disposable
        }
    }

    /// A finite signal of the future's value, once it succeeds; it ends with the error if the future
    /// fails.
    public var valueSignal: FiniteSignal<Value> {
        resultSignal.map(on: .none) { try $0.get() }
    }

    /// A finite signal of the future's value followed by the end; it ends with the error if the future
    /// fails.
    public var valueThenEndSignal: FiniteSignal<Value> {
        FiniteSignal(options: []) { callback in
            self.onResult(on: .none) { result in
                switch result {
                case .success(let value):
                    callback(.value(value))
                    callback(.end)
                case .failure(let error):
                    callback(.end(error))
                }
            }.disposable
        }
    }

    /// Sets `signal`'s value to the future's value when it succeeds, on `scheduler`.
    ///
    /// - Returns: a future with the same result, completed once the value was set.
    @discardableResult
    public func bindTo<Provider: SignalProvider>(
        on scheduler: Scheduler = .current, _ signal: Provider
    ) -> Future<Value> where Provider.Value == Value, Provider.Kind == ReadWrite {
        let signal = signal.providedSignal
        return onValue(on: scheduler) { signal.value = $0 }
    }

    /// Sets `signal`'s optional value to the future's value when it succeeds, on `scheduler`.
    ///
    /// - Returns: a future with the same result, completed once the value was set.
    @discardableResult
    public func bindTo<Provider: SignalProvider>(
        on scheduler: Scheduler = .current, _ signal: Provider
    ) -> Future<Value> where Provider.Value == Value?, Provider.Kind == ReadWrite {
        let signal = signal.providedSignal
        return onValue(on: scheduler) { signal.value = $0 }
    }

    /// A future of the same value, completed only once `signal` is (or becomes) true.
    public func hold<Provider: SignalProvider>(
        until signal: Provider
    ) -> Future<Value> where Provider.Value == Bool, Provider.Kind.DropWrite == Read {
        let isReady = signal.providedSignal.atOnce().filter(on: .none) { $0 }
        return flatMap(on: .none) { value in
            isReady.future.map(on: .none) { _ in value }
        }
    }
}
