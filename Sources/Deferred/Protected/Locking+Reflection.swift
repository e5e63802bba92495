import Flow

// A mirror of its own, as for every class holding a lock or an atomic: see Flow's Helpers/Reflection.swift.
extension NativeLock: CustomReflectable, CustomDebugStringConvertible {
    /// No children: a lock has nothing to show but its identity.
    public var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .class, ancestorRepresentation: .suppressed)
    }

    /// `NativeLock`.
    public var debugDescription: String { "NativeLock" }
}
