// Reflection (`dump`, `Mirror`, Swift Testing's account of a failed `#expect`, a debugger's
// variables view) reads every stored property of a class it is shown, and stops the process in
// `__swift_cannot_copy_noncopyable_type` when one has a generic type bound to a non-copyable one:
// a state of a non-copyable type. An `Atomic`, a `Mutex` or a `FutureLock` stored directly reads as
// an empty child. `Locked` and every class storing a lock or an atomic therefore have a mirror of
// their own, which names what a reader wants to know and never the lock, its state or the atomic word.

/// A class whose stored properties reflection must not read (they include an atomic or a lock), and
/// that has nothing else worth showing: its mirror has no children. For classes outside this module;
/// this module's own declare `customMirror` with ``opaqueMirror(of:)``.
package protocol OpaqueToReflection: AnyObject, CustomReflectable {}

extension OpaqueToReflection {
    /// A mirror with no children, so that reflection never reads the non-copyable fields.
    package var customMirror: Mirror { opaqueMirror(of: self) }
}

/// A mirror of `object` with no children, so that reflection never reads its non-copyable fields.
@usableFromInline
package func opaqueMirror(of object: AnyObject) -> Mirror {
    Mirror(object, children: [], displayStyle: .class, ancestorRepresentation: .suppressed)
}

// Classes reachable from public ones (through a bag's disposables, a signal, a future's operation):
// no children. (Declared one by one: a witness from the package protocol's extension cannot be
// `@usableFromInline`, which the inlinable classes need.)
extension Locked: CustomReflectable {
    @usableFromInline
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension ScheduledWork: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension MainQueueEmbedding: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension EventGate: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension CallbackerNode: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension CallbackerHandle: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension CallbackerListener: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension SignalListener: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension ListenerHandle: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension QueueEntry: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension SequentialFutureMapper: CustomReflectable {
    @usableFromInline
    var customMirror: Mirror { opaqueMirror(of: self) }
}

extension Future: CustomReflectable {
    /// The future's state, `result` (`nil` while pending), and in debug builds where it was created;
    /// never its lock or its continuations.
    public var customMirror: Mirror {
        #if DEBUG
        let children: KeyValuePairs<String, Any> = ["result": result as Any, "creationSite": creationSite]
        #else
        let children: KeyValuePairs<String, Any> = ["result": result as Any]
        #endif
        return Mirror(self, children: children, displayStyle: .class, ancestorRepresentation: .suppressed)
    }
}

extension Future: CustomDebugStringConvertible {
    /// The same as ``description``: the future's state, and in debug builds where it was created.
    public var debugDescription: String { description }
}

extension FutureQueue: CustomReflectable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The queue's resource, its concurrency limit and how many operations it holds.
    public var customMirror: Mirror {
        Mirror(self, children: ["resource": resource, "maxConcurrentCount": maxConcurrentCount, "count": count],
               displayStyle: .class, ancestorRepresentation: .suppressed)
    }

    /// `FutureQueue(count: 2, maxConcurrentCount: 1)`.
    public var description: String { "FutureQueue(count: \(count), maxConcurrentCount: \(maxConcurrentCount))" }

    /// The same as ``description``.
    public var debugDescription: String { description }
}

extension Callbacker: CustomReflectable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Whether any callback is registered.
    public var customMirror: Mirror {
        Mirror(self, children: ["isEmpty": isEmpty], displayStyle: .class, ancestorRepresentation: .suppressed)
    }

    /// `Callbacker<Int>(isEmpty: true)`.
    public var description: String { "Callbacker<\(Value.self)>(isEmpty: \(isEmpty))" }

    /// The same as ``description``.
    public var debugDescription: String { description }
}

extension LiveFutureCount: CustomReflectable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The number of live futures.
    public var customMirror: Mirror {
        Mirror(self, children: ["value": value], displayStyle: .class, ancestorRepresentation: .suppressed)
    }

    /// `LiveFutureCount(3)`.
    public var description: String { "LiveFutureCount(\(value))" }

    /// The same as ``description``.
    public var debugDescription: String { description }
}

extension SingleTaskPerformer: CustomReflectable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Whether a task is being performed.
    public var customMirror: Mirror {
        Mirror(self, children: ["isPerforming": isPerforming], displayStyle: .class,
               ancestorRepresentation: .suppressed)
    }

    /// `SingleTaskPerformer<Int>(isPerforming: false)`.
    public var description: String { "SingleTaskPerformer<\(Value.self)>(isPerforming: \(isPerforming))" }

    /// The same as ``description``.
    public var debugDescription: String { description }
}

extension Scheduler: CustomReflectable, CustomDebugStringConvertible {
    /// The scheduler's ``description``, never the loop or queue object behind it.
    public var customMirror: Mirror {
        Mirror(self, children: ["description": description], displayStyle: .struct,
               ancestorRepresentation: .suppressed)
    }

    /// The same as ``description``.
    public var debugDescription: String { description }
}
