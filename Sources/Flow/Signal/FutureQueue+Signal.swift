extension FutureQueue {
    /// Whether the queue is empty, as a readable signal: its current value is ``isEmpty``, and it
    /// signals each time the queue becomes empty or non-empty.
    ///
    /// ```swift
    /// bag += uploads.isEmptySignal.atOnce().onValue { isIdle in spinner.isHidden = isIdle }
    /// ```
    public var isEmptySignal: ReadSignal<Bool> {
        let changes = emptinessChanged
        // Each change re-reads `isEmpty`: two changes racing on different threads may be announced
        // out of order, and `distinct()` then drops the repeat.
        let isEmptyNow: @Sendable () -> Bool = { [weak self] in self?.isEmpty ?? true }
        return ReadSignal(getValue: isEmptyNow, options: []) { callback in
            changes.addCallback { _ in callback(isEmptyNow()) }
        }.distinct(on: .none)
    }

    /// A signal of each time the queue becomes empty.
    ///
    /// ```swift
    /// bag += uploads.didBecomeEmpty.onValue { print("all uploads done") }
    /// ```
    public var didBecomeEmpty: Signal<Void> {
        isEmptySignal.filter(on: .none) { $0 }.toVoid()
    }
}
