/// The one type behind the four kinds of signal: ``Signal``, ``ReadSignal``, ``ReadWriteSignal`` and
/// ``FiniteSignal`` are `CoreSignal`s of kind ``Plain``, ``Read``, ``ReadWrite`` and ``Finite``.
///
/// A signal is a recipe for listening: each listener registers anew, gets the current value first
/// (if the kind has one) and then the values as they come, on the scheduler it asked for, until it
/// disposes of what the listener call returned or a finite signal ends.
///
/// ```swift
/// let bag = DisposeBag()
/// let taps = Callbacker<Void>()
/// bag += Signal(callbacker: taps).onValue { print("tapped") }
/// taps.callAll()   // prints "tapped"
/// ```
///
/// Guarantees every signal of this library keeps:
/// - each registration receives one `.initial`, then values one at a time: never two at once, and a
///   value sent from inside a callback of the same signal waits until that callback has returned,
///   so sending from a callback never recurses;
/// - nothing after `.end`;
/// - no lock is held while your code runs.
public final class CoreSignal<Kind: SignalKind, Value: Sendable>: Sendable {
    /// A registration callback: receives the `.initial`, then the events.
    @usableFromInline
    typealias Callback = @Sendable (EventType<Value>) -> Void

    /// Registers a callback and returns what unregisters it. Every implementation calls the callback
    /// serially, `.initial` first, nothing after `.end`.
    @usableFromInline
    let register: @Sendable (@escaping Callback) -> Disposable

    /// Sets the current value, for ``ReadWrite`` signals.
    @usableFromInline
    let setter: (@Sendable (Value) -> Void)?

    /// The callbacker a `Signal(callbacker:)` stands for: `onValue` registers its listener there
    /// directly, as one node, instead of through `register`.
    @usableFromInline
    let callbacker: Callbacker<Value>?

    @usableFromInline
    init(
        setValue: (@Sendable (Value) -> Void)? = nil,
        callbacker: Callbacker<Value>? = nil,
        register: @escaping @Sendable (@escaping Callback) -> Disposable
    ) {
        self.register = register
        self.setter = setValue
        self.callbacker = callbacker
    }

    /// The current value, read by registering and disposing at once: the `.initial` of a readable
    /// signal carries it.
    func currentValue() -> Value? {
        guard Kind.isReadable else { return nil }
        let captured = Locked<Value?>(nil)
        register { eventType in
            if case .initial(let value?) = eventType {
                captured.withLock { $0 = value }
            }
        }.dispose()
        return captured.withLock { $0 }
    }

    /// The current value of a readable signal, with a clear message if its producer gave none.
    func requiredCurrentValue() -> Value {
        guard let value = currentValue() else {
            misuseFailure("ReadSignal.value: the signal's producer gave no current value (its getValue returned none)")
        }
        return value
    }
}

extension CoreSignal: SignalProvider {
    /// The signal itself: transforms and listeners are written once, for every ``SignalProvider``.
    public var providedSignal: CoreSignal<Kind, Value> { self }
}
