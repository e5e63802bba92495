import Flow

// Mirrors of their own, as for every class holding a lock or an atomic: see Flow's
// Helpers/Reflection.swift.

extension RepeatingTimer: OpaqueToReflection {}

extension Debouncer: CustomReflectable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The quiet period and the scheduler; never the lock or the pending work.
    public var customMirror: Mirror {
        Mirror(self, children: ["interval": interval, "scheduler": scheduler], displayStyle: .class,
               ancestorRepresentation: .suppressed)
    }

    /// `Debouncer<Int>(interval: 0.5, Scheduler(main))`.
    public var description: String { "Debouncer<\(Value.self)>(interval: \(interval), \(scheduler))" }

    /// The same as ``description``.
    public var debugDescription: String { description }
}
