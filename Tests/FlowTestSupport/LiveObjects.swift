import Synchronization

/// Counts instances of ``Tracked`` alive: captured in closures, they show whether the closures were
/// released.
public final class LiveObjects: Sendable {
    let count = Atomic<Int>(0)

    public init() {}

    /// How many of its ``Tracked`` objects are alive.
    public var alive: Int { count.load(ordering: .acquiring) }

    /// A new object counted here until it is freed.
    public func make() -> Tracked { Tracked(self) }
}

/// An object whose life is counted by its ``LiveObjects``.
public final class Tracked: Sendable {
    let owner: LiveObjects

    init(_ owner: LiveObjects) {
        self.owner = owner
        owner.count.add(1, ordering: .relaxed)
    }

    /// Uses the object, so that a closure capturing it keeps it.
    public func touch() {}

    deinit { owner.count.subtract(1, ordering: .releasing) }
}
