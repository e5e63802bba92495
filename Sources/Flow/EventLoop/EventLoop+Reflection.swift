// See Helpers/Reflection.swift: reflection of the loop's own fields reached its lock-guarded,
// non-copyable queue of submissions and stopped the process.

extension EventLoop: CustomReflectable, CustomDebugStringConvertible {
    /// The loop's name and whether it is running or closed; never its atomics, queues or libuv handles.
    public var customMirror: Mirror {
        Mirror(self, children: ["name": name, "isRunning": isRunning, "isClosed": isClosed],
               displayStyle: .class, ancestorRepresentation: .suppressed)
    }

    /// `EventLoop(api, running)`: the loop's name and state.
    public var debugDescription: String {
        "EventLoop(\(name), \(isClosed ? "closed" : isRunning ? "running" : "not running"))"
    }
}
