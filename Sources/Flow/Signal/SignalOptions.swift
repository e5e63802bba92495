/// Options for signals built from a producer closure (`Signal { callback in ... }` and its kin).
public struct SignalOptions: OptionSet, Sendable {
    /// The options' bits.
    public let rawValue: Int

    /// Creates options from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Listeners that overlap in time share one run of the producer: the producer is called for the
    /// first listener and its clean-up runs when the last one goes. Worth it when starting the
    /// producer costs something (a socket, a timer, an observer).
    ///
    /// ```swift
    /// let ticks = Signal(options: .shared) { callback in startTicking(callback) }
    /// ```
    public static let shared = SignalOptions(rawValue: 1 << 0)

    /// `[.shared]`, as for Flow.
    public static let `default`: SignalOptions = [.shared]
}

extension CoreSignal {
    /// A signal over a producer: each registration (or, with `.shared`, each run shared by
    /// overlapping registrations) calls `producer` with a callback for events, and gets the
    /// serialisation, the `.initial` first and the end handling of ``EventGate``. A `callbacker`
    /// whose values the producer forwards lets `onValue` register there directly.
    @inlinable
    convenience init(
        getValue: (@Sendable () -> Value)? = nil,
        setValue: (@Sendable (Value) -> Void)? = nil,
        callbacker: Callbacker<Value>? = nil,
        options: SignalOptions,
        producer: @escaping @Sendable (@escaping @Sendable (Event<Value>) -> Void) -> Disposable
    ) {
        let unshared: @Sendable (@escaping Callback) -> Disposable = { callback in
            EventGate.start(getValue: getValue, producer: producer, downstream: callback)
        }
        if options.contains(.shared) {
            let sharing = SharedRegistrations<Kind, Value>(register: unshared)
            self.init(setValue: setValue, callbacker: callbacker, register: { callback in sharing.add(callback) })
        } else {
            self.init(setValue: setValue, callbacker: callbacker, register: unshared)
        }
    }
}
