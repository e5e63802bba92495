/// A small deterministic random generator (SplitMix64), so that a run with random input can be replayed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's state: its seed to begin with.
    public var state: UInt64

    /// A generator seeded with `state`.
    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
