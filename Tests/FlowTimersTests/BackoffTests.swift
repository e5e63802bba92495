import FlowTimers
import Synchronization
import Testing

@Suite("Backoff strategies")
struct BackoffTests {
    @Test("constant waits the same before every retry")
    func constant() {
        let backoff = Backoff.constant(2)
        #expect((1...5).map { backoff.delay(forAttempt: $0) } == [2, 2, 2, 2, 2])
    }

    @Test("linear grows by its increment, up to its maximum")
    func linear() {
        let backoff = Backoff.linear(initial: 1, increment: 2, maximum: 6)
        #expect((1...5).map { backoff.delay(forAttempt: $0) } == [1, 3, 5, 6, 6])
    }

    @Test("exponential multiplies, up to its cap")
    func exponential() {
        let backoff = Backoff.exponential(initial: 1, maximum: 60)
        #expect((1...8).map { backoff.delay(forAttempt: $0) } == [1, 2, 4, 8, 16, 32, 60, 60])
        let tripling = Backoff.exponential(initial: 0.5, multiplier: 3, maximum: 100)
        #expect((1...4).map { tripling.delay(forAttempt: $0) } == [0.5, 1.5, 4.5, 13.5])
    }

    @Test("exponential stays at its cap for absurd attempt numbers")
    func exponentialHugeAttempts() {
        let backoff = Backoff.exponential(initial: 1, maximum: 30)
        #expect(backoff.delay(forAttempt: 10_000) == 30)
        #expect(Backoff.exponential(initial: 0, maximum: 30).delay(forAttempt: 10_000) == 30)
    }

    @Test("full jitter stays between zero and the capped delay")
    func fullJitterBounds() {
        let backoff = Backoff.exponential(
            initial: 1, maximum: 20, jitter: .full, random: RandomSource(using: SplitMix64(state: 7)))
        for attempt in 1...12 {
            let ceiling = min(20, Double(1 << (attempt - 1)))
            for _ in 0..<200 {
                let delay = backoff.delay(forAttempt: attempt)
                #expect(delay >= 0 && delay <= ceiling, "attempt \(attempt): \(delay)")
            }
        }
        let least = Backoff.exponential(initial: 1, maximum: 20, jitter: .full, random: RandomSource { 0 })
        let most = Backoff.exponential(initial: 1, maximum: 20, jitter: .full, random: RandomSource { 1 })
        let half = Backoff.exponential(initial: 1, maximum: 20, jitter: .full, random: RandomSource { 0.5 })
        #expect(least.delay(forAttempt: 4) == 0)
        #expect(most.delay(forAttempt: 4) == 8)
        #expect(half.delay(forAttempt: 4) == 4)
        #expect(most.delay(forAttempt: 9) == 20)
    }

    @Test("equal jitter stays between half the capped delay and all of it")
    func equalJitterBounds() {
        let backoff = Backoff.exponential(
            initial: 1, maximum: 20, jitter: .equal, random: RandomSource(using: SplitMix64(state: 11)))
        for attempt in 1...12 {
            let ceiling = min(20, Double(1 << (attempt - 1)))
            for _ in 0..<200 {
                let delay = backoff.delay(forAttempt: attempt)
                #expect(delay >= ceiling / 2 && delay <= ceiling, "attempt \(attempt): \(delay)")
            }
        }
        let least = Backoff.exponential(initial: 1, maximum: 20, jitter: .equal, random: RandomSource { 0 })
        let most = Backoff.exponential(initial: 1, maximum: 20, jitter: .equal, random: RandomSource { 1 })
        #expect(least.delay(forAttempt: 4) == 4)
        #expect(most.delay(forAttempt: 4) == 8)
    }

    @Test("the same seed gives the same jittered delays")
    func seededJitterIsRepeatable() {
        func delays() -> [Double] {
            let backoff = Backoff.exponential(
                initial: 1, maximum: 60, jitter: .full, random: RandomSource(using: SplitMix64(state: 42)))
            return (1...10).map { backoff.delay(forAttempt: $0) }
        }
        #expect(delays() == delays())
    }

    @Test("out-of-range random values are clamped into the unit interval")
    func randomValuesAreClamped() {
        let above = Backoff.constant(4).jittered(.full, random: RandomSource { 7 })
        let below = Backoff.constant(4).jittered(.full, random: RandomSource { -1 })
        #expect(above.delay(forAttempt: 1) == 4)
        #expect(below.delay(forAttempt: 1) == 0)
    }

    @Test("a custom rule, capped and jittered like the others")
    func custom() {
        let squares = Backoff.custom { Double($0 * $0) }
        #expect((1...4).map { squares.delay(forAttempt: $0) } == [1, 4, 9, 16])
        let capped = squares.capped(at: 10)
        #expect((1...4).map { capped.delay(forAttempt: $0) } == [1, 4, 9, 10])
        let jittered = capped.jittered(.equal, random: RandomSource { 0 })
        #expect((1...4).map { jittered.delay(forAttempt: $0) } == [0.5, 2, 4.5, 5])
        #expect(Backoff.custom { _ in -3 }.delay(forAttempt: 1) == 0)
    }
}
