extension SignalProvider where Kind.DropWrite == Read {
    /// The current value of this readable signal each time `driver` signals: a signal of the kind of
    /// `driver`, without write access. A readable driver gives this signal's current value as the
    /// current value; the driver's end ends it.
    ///
    /// ```
    /// ----*------*------*-----*--|     driver
    /// a)------b------c-----------|     self
    ///        driven(by: driver)
    /// -----a------b------c-----c--|
    /// ```
    ///
    /// ```swift
    /// bag += enteredText.driven(by: sendButton.taps).onValue { text in send(text) }
    /// ```
    public func driven<Driver: SignalProvider>(by driver: Driver) -> CoreSignal<Driver.Kind.DropWrite, Value> {
        let signal = providedSignal
        let driver = driver.providedSignal
        return CoreSignal(register: { callback in
            driver.register { eventType in
                switch eventType {
                case .initial(nil):
                    callback(.initial(nil))
                case .initial:
                    callback(.initial(signal.requiredCurrentValue()))
                case .event(.value):
                    callback(.event(.value(signal.requiredCurrentValue())))
                case .event(.end(let error)):
                    callback(.event(.end(error)))
                }
            }
        })
    }
}
