import Flow

/// The failures of one kind on one handle (a listener's accepts, a UDP socket's receives): counted,
/// and reported through ``FlowDiagnostics`` at the 1st, 2nd, 4th, 8th, ... one, since a process out
/// of file descriptors fails every accept and its log must not drown. Loop context only, like the
/// handle.
struct FailureCount {
    /// What failed, as the report says it: "accepting a connection".
    let action: String
    /// The report's metadata key for ``count``: "failedAcceptCount".
    let countKey: String
    /// How many failed.
    private(set) var count = 0

    init(action: String, countKey: String) {
        self.action = action
        self.countKey = countKey
    }

    /// Counts a failure; whether to report it.
    mutating func countOne() -> Bool {
        count += 1
        return count & (count - 1) == 0
    }

    /// Reports the failure just counted, of the handle at `place` (its address or path, under
    /// `placeKey`) on `loop`. Not mutating: the report's handler may read the handle's count.
    func report(_ reason: String, loop: EventLoop, placeKey: String, place: String) {
        FlowDiagnostics.report(
            .warning, "\(action) failed: \(reason)",
            metadata: ["loop": loop.name, placeKey: place, countKey: "\(count)"])
    }
}

extension FailureCount {
    /// A listener's failed accepts.
    static var accepts: FailureCount { FailureCount(action: "accepting a connection", countKey: "failedAcceptCount") }
}
