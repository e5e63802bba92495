import Flow

/// Where a ``Backoff`` gets the randomness for its jitter: the system's generator by default, or one a
/// test controls.
///
/// ```swift
/// let fixed = RandomSource { 0.25 }                              // always a quarter
/// let seeded = RandomSource(using: MySeededGenerator(seed: 42))  // repeatable sequence
/// ```
public struct RandomSource: Sendable {
    private let nextValue: @Sendable () -> Double

    /// A source answering whatever `unitValue` returns: a number in `0...1` (values outside are clamped).
    ///
    /// ```swift
    /// let alwaysMaximum = RandomSource { 1 }
    /// ```
    @preconcurrency
    public init(_ unitValue: @escaping @Sendable () -> Double) {
        nextValue = unitValue
    }

    /// A source drawing from `generator`, which it owns from now on; safe to share between threads.
    ///
    /// ```swift
    /// var generator = SystemRandomNumberGenerator()
    /// let source = RandomSource(using: generator)
    /// ```
    public init<Generator: RandomNumberGenerator & Sendable>(using generator: Generator) {
        let shared = SharedGenerator(generator)
        nextValue = { shared.nextUnitValue() }
    }

    /// The system's random number generator.
    public static let system = RandomSource { Double.random(in: 0...1) }

    /// The next random number, in `0...1`.
    ///
    /// ```swift
    /// let fraction = RandomSource.system.nextUnitValue()
    /// ```
    public func nextUnitValue() -> Double {
        let value = nextValue()
        return value.isNaN ? 0 : min(max(value, 0), 1)
    }
}

/// A generator shared between threads: the mutex serialises its mutating `next()`.
private final class SharedGenerator<Generator: RandomNumberGenerator & Sendable>: Sendable {
    private let generator: Locked<Generator>

    init(_ generator: Generator) { self.generator = Locked(generator) }

    func nextUnitValue() -> Double {
        generator.withLock { Double.random(in: 0...1, using: &$0) }
    }
}
