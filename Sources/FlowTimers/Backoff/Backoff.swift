import Flow

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How long to wait before each retry of a failed operation: constant, linear, exponential, or your own
/// rule, optionally capped and randomised ("jitter") so that many clients failing together do not retry
/// together.
///
/// Attempts count retries from 1: ``delay(forAttempt:)`` with 1 is the wait after the first failure.
///
/// ```swift
/// let backoff = Backoff.exponential(initial: 0.5, maximum: 30, jitter: .full)
/// backoff.delay(forAttempt: 1)   // somewhere in 0...0.5
/// backoff.delay(forAttempt: 4)   // somewhere in 0...4
/// backoff.delay(forAttempt: 10)  // somewhere in 0...30
/// ```
///
/// Tests inject the randomness with a ``RandomSource`` to get exact delays:
///
/// ```swift
/// let halfway = Backoff.exponential(initial: 1, maximum: 60, jitter: .full, random: RandomSource { 0.5 })
/// halfway.delay(forAttempt: 3)   // 2.0: half of 4
/// ```
public struct Backoff: Sendable {
    /// How a delay is randomised once the strategy and the cap have computed it.
    public enum Jitter: Sendable, Hashable {
        /// No randomness: exactly the computed delay.
        case none
        /// Anywhere between zero and the computed delay: spreads retries the most.
        case full
        /// Half the computed delay, plus anywhere up to the other half: never waits less than half.
        case equal
    }

    private enum Strategy: Sendable {
        case constant(Double)
        case linear(initial: Double, increment: Double)
        case exponential(initial: Double, multiplier: Double)
        case custom(@Sendable (Int) -> Double)
    }

    private let strategy: Strategy
    /// The longest delay, applied before jitter.
    public let maximum: Double
    /// How delays are randomised.
    public let jitter: Jitter
    /// Where the randomness for ``jitter`` comes from.
    public let random: RandomSource

    private init(strategy: Strategy, maximum: Double, jitter: Jitter = .none, random: RandomSource = .system) {
        misusePrecondition(!maximum.isNaN && maximum >= 0, "Backoff: the maximum must be zero or more seconds, not \(maximum)")
        self.strategy = strategy
        self.maximum = maximum
        self.jitter = jitter
        self.random = random
    }

    /// The same delay before every retry.
    ///
    /// ```swift
    /// Backoff.constant(2).delay(forAttempt: 7)   // 2
    /// ```
    public static func constant(_ delay: Double) -> Backoff {
        Backoff(strategy: .constant(delay), maximum: .infinity)
    }

    /// A delay that grows by `increment` with every retry: `initial`, `initial + increment`, …, capped at
    /// `maximum`.
    ///
    /// ```swift
    /// let backoff = Backoff.linear(initial: 1, increment: 2, maximum: 6)
    /// backoff.delay(forAttempt: 1)   // 1
    /// backoff.delay(forAttempt: 3)   // 5
    /// backoff.delay(forAttempt: 9)   // 6
    /// ```
    public static func linear(initial: Double, increment: Double, maximum: Double = .infinity) -> Backoff {
        Backoff(strategy: .linear(initial: initial, increment: increment), maximum: maximum)
    }

    /// A delay multiplied by `multiplier` with every retry: `initial`, `initial × multiplier`, …, capped
    /// at `maximum`, then randomised per `jitter`.
    ///
    /// ```swift
    /// let backoff = Backoff.exponential(initial: 1, maximum: 60)
    /// (1...8).map { backoff.delay(forAttempt: $0) }   // [1, 2, 4, 8, 16, 32, 60, 60]
    /// ```
    ///
    /// - Parameters:
    ///   - initial: seconds before the first retry (before jitter).
    ///   - multiplier: growth factor per retry; 2 by default.
    ///   - maximum: the cap, in seconds, applied before jitter.
    ///   - jitter: how the capped delay is randomised; none by default.
    ///   - random: the source of randomness for the jitter.
    public static func exponential(
        initial: Double,
        multiplier: Double = 2,
        maximum: Double,
        jitter: Jitter = .none,
        random: RandomSource = .system
    ) -> Backoff {
        Backoff(strategy: .exponential(initial: initial, multiplier: multiplier), maximum: maximum,
                jitter: jitter, random: random)
    }

    /// Delays computed by your own function of the attempt number (1 for the first retry).
    ///
    /// ```swift
    /// let fibonacci = Backoff.custom { attempt in [1, 1, 2, 3, 5, 8][min(attempt, 6) - 1] }
    /// ```
    @preconcurrency
    public static func custom(_ delay: @escaping @Sendable (_ attempt: Int) -> Double) -> Backoff {
        Backoff(strategy: .custom(delay), maximum: .infinity)
    }

    /// This backoff with its delays capped at `maximum` seconds (before jitter).
    ///
    /// ```swift
    /// let backoff = Backoff.custom { Double($0 * $0) }.capped(at: 10)
    /// ```
    public func capped(at maximum: Double) -> Backoff {
        Backoff(strategy: strategy, maximum: maximum, jitter: jitter, random: random)
    }

    /// This backoff with its delays randomised per `jitter`, using `random`.
    ///
    /// ```swift
    /// let backoff = Backoff.linear(initial: 1, increment: 1).jittered(.equal)
    /// ```
    public func jittered(_ jitter: Jitter, random: RandomSource = .system) -> Backoff {
        Backoff(strategy: strategy, maximum: maximum, jitter: jitter, random: random)
    }

    /// The seconds to wait before retry number `attempt` (1 for the first retry). Never negative.
    ///
    /// ```swift
    /// Backoff.exponential(initial: 0.1, maximum: 10).delay(forAttempt: 3)   // 0.4
    /// ```
    public func delay(forAttempt attempt: Int) -> Double {
        misusePrecondition(attempt >= 1, "Backoff.delay(forAttempt:): attempts count from 1, not \(attempt)")
        let computed: Double
        switch strategy {
        case .constant(let delay):
            computed = delay
        case .linear(let initial, let increment):
            computed = initial + increment * Double(attempt - 1)
        case .exponential(let initial, let multiplier):
            computed = initial * pow(multiplier, Double(attempt - 1))
        case .custom(let delay):
            computed = delay(attempt)
        }
        // A NaN (say 0 × ∞ from a huge exponent) means "very long": take the cap.
        let capped = computed.isNaN ? maximum : min(max(0, computed), maximum)
        guard capped.isFinite else { return capped }
        switch jitter {
        case .none:
            return capped
        case .full:
            return capped * random.nextUnitValue()
        case .equal:
            return capped / 2 + capped / 2 * random.nextUnitValue()
        }
    }
}
