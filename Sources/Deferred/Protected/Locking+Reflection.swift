import Flow

// Reflection must not read the lock's `Mutex` (it stops the process): see Flow's Helpers/Reflection.swift.
extension NativeLock: CustomReflectable, CustomDebugStringConvertible {
    /// No children: a lock has nothing to show but its identity.
    public var customMirror: Mirror {
        Mirror(self, children: [], displayStyle: .class, ancestorRepresentation: .suppressed)
    }

    /// `NativeLock`.
    public var debugDescription: String { "NativeLock" }
}
