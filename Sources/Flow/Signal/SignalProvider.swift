/// A type that stands for a signal, so that every signal transform and listener works on it directly.
///
/// ``CoreSignal`` is itself a provider; conform your own types to give them the signal API:
///
/// ```swift
/// final class Thermometer: SignalProvider {
///     private let readings = ReadWriteSignal(20.0)
///     var providedSignal: ReadSignal<Double> { readings.readOnly() }
/// }
/// bag += thermometer.map { $0 > 30 }.onValue { isHot in ... }
/// ```
public protocol SignalProvider {
    /// The type of the values signalled.
    associatedtype Value: Sendable
    /// What the provided signal offers besides values: ``Plain``, ``Read``, ``ReadWrite`` or ``Finite``.
    associatedtype Kind: SignalKind
    /// The signal that transforms and listeners work on.
    var providedSignal: CoreSignal<Kind, Value> { get }
}
