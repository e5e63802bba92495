import Flow

// A mirror of its own, as for every class holding a lock or an atomic: see Flow's Helpers/Reflection.swift.
extension VirtualTimeScheduler: CustomReflectable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The clock's time and how much work is due on it.
    public var customMirror: Mirror {
        Mirror(self, children: ["now": now, "pendingCount": pendingCount], displayStyle: .class,
               ancestorRepresentation: .suppressed)
    }

    /// `VirtualTimeScheduler(now: 1.5 seconds, pendingCount: 2)`.
    public var description: String { "VirtualTimeScheduler(now: \(now), pendingCount: \(pendingCount))" }

    /// The same as ``description``.
    public var debugDescription: String { description }
}
