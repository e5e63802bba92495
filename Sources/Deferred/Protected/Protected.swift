/// A value that threads share, reachable only while holding its lock.
///
/// ```swift
/// let cache = Protected(initialValue: [String: Int]())
/// cache.withWriteLock { $0["answer"] = 42 }
/// let answer = cache.withReadLock { $0["answer"] }
/// ```
public final class Protected<T> {
    private let lock: any Locking
    private var value: T

    /// Wraps `initialValue`, guarded by `lock`.
    ///
    /// - Parameters:
    ///   - initialValue: the value to guard.
    ///   - lock: a ``NativeLock`` by default; a ``POSIXReadWriteLock`` lets readers in together.
    public init(initialValue: T, lock: any Locking = NativeLock()) {
        value = initialValue
        self.lock = lock
    }

    /// Runs `body` with the value, while holding the lock for reading.
    public func withReadLock<Return>(_ body: (T) throws -> Return) rethrows -> Return {
        try lock.withReadLock { try body(value) }
    }

    /// Runs `body` with the value if the lock can be taken for reading at once; returns `nil`
    /// without running it otherwise.
    public func withAttemptedReadLock<Return>(_ body: (T) throws -> Return) rethrows -> Return? {
        try lock.withAttemptedReadLock { try body(value) }
    }

    /// Runs `body` with the value to change, while holding the lock exclusively.
    public func withWriteLock<Return>(_ body: (inout T) throws -> Return) rethrows -> Return {
        try lock.withWriteLock { try body(&value) }
    }
}

// @unchecked Sendable: `value` is read and written only inside `lock`, and only values of a Sendable
// type are handed between threads.
extension Protected: @unchecked Sendable where T: Sendable {}

extension Protected: CustomReflectable {
    /// What a debugger shows, shaped like an optional (as Deferred shows it): the value, or
    /// `isLocked: true` if it could not be read at once.
    public var customMirror: Mirror {
        withAttemptedReadLock { value in
            Mirror(self, children: ["value": value], displayStyle: .optional)
        } ?? Mirror(self, children: ["isLocked": true], displayStyle: .optional)
    }
}

extension Protected: CustomDebugStringConvertible {
    /// Describes the value, or says it is locked if it could not be read at once.
    public var debugDescription: String {
        withAttemptedReadLock { "Protected(\(String(reflecting: $0)))" } ?? "Protected(locked)"
    }
}
