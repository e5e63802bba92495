import Dispatch

/// The reading side of a value that becomes known later: a ``Deferred``, a ``Future``, a ``Task``,
/// or a type of your own.
///
/// A conforming type provides ``upon(_:execute:)`` and ``peek()`` or ``wait(until:)``: each of the
/// two defaults to the other.
/// In return it gets every algorithm of this library: `map(upon:transform:)`,
/// `andThen(upon:start:)`, ``and(_:)``, ``ignored()``, ``every(per:)``, ``eraseToFuture()``.
///
/// ```swift
/// let name: Future<String> = fetchUser(id).map { $0.name }
/// name.upon(.main) { label.text = $0 }
/// ```
public protocol FutureProtocol<Value>: CustomDebugStringConvertible, Sendable {
    /// The type of the value this future is filled with.
    associatedtype Value: Sendable

    /// Calls `body` with the value once it is known, by submitting it to `executor`.
    ///
    /// Closures are submitted in the order they were given; on a serial executor they therefore run
    /// in that order. A closure is released once it has been submitted and run.
    ///
    /// - Parameters:
    ///   - executor: where `body` runs.
    ///   - body: the work to do with the value.
    @preconcurrency
    func upon(_ executor: any Executor, execute body: @escaping @Sendable (Value) -> Void)

    /// The value, if it is known already; `nil` otherwise. Never blocks.
    func peek() -> Value?

    /// Blocks the calling thread until the value is known or `time` has come, and returns it, or
    /// `nil` at the deadline.
    ///
    /// Waiting inside an event loop's own work (one of its callbacks) for a value that is not there
    /// yet stops the program with a message: the loop could not run the work that fills the value, so
    /// the wait would never end. Anywhere else, the main thread included, it blocks.
    func wait(until time: DispatchTime) -> Value?
}

extension FutureProtocol {
    /// The executor `upon` uses when given none: `DispatchQueue.any()`, a concurrent
    /// background queue, wherever the caller runs (on an event loop too).
    public static var defaultUponExecutor: PreferredExecutor {
        DispatchQueue.any()
    }

    /// Calls `body` with the value once it is known, on `queue`: by default a concurrent background
    /// queue (``defaultUponExecutor``), wherever the caller runs.
    ///
    /// ```swift
    /// deferredResult.upon { result in
    ///     print("got \(result)")
    /// }
    /// friends.upon(.main) { friends in tableView.reloadData() }
    /// ```
    ///
    /// Code on an event loop that wants `body` back on the loop names it: `upon(loop)`,
    /// `upon(Scheduler.main)`.
    @preconcurrency
    @inlinable
    public func upon(
        _ queue: PreferredExecutor = Self.defaultUponExecutor, execute body: @escaping @Sendable (Value) -> Void
    ) {
        upon(queue as any Executor, execute: body)
    }

    /// The value, if it is known already: by default, a ``wait(until:)`` that does not wait. A type
    /// implements ``peek()`` or ``wait(until:)``; each defaults to the other.
    public func peek() -> Value? {
        wait(until: .now())
    }

    /// Whether the value is known.
    @inlinable
    public var isFilled: Bool {
        peek() != nil
    }

    /// Blocks until the value is known or `time` has come; see the requirement's documentation.
    public func wait(until time: DispatchTime) -> Value? {
        if let value = peek() {
            return value
        }
        preconditionWaitingCanFinish("wait(until:)")
        let filled = DispatchSemaphore(value: 0)
        upon(InlineExecutor.shared) { _ in filled.signal() }
        _ = blockUntilSignalled(filled, until: time, "wait(until:)")
        return peek()
    }
}

extension FutureProtocol {
    /// Describes the future and its value for debugging: `Deferred(42)`, `Future(not filled)`, and
    /// `Deferred(filled)` for a value of no content (`Void`).
    public var debugDescription: String {
        let typeName = String(describing: Self.self)
        let baseName = typeName.firstIndex(of: "<").map { String(typeName[..<$0]) } ?? typeName
        guard let value = peek() else {
            return "\(baseName)(not filled)"
        }
        if Value.self == Void.self {
            return "\(baseName)(filled)"
        }
        return "\(baseName)(\(String(reflecting: value)))"
    }

    /// What a debugger shows, shaped like an optional (as Deferred shows it): the value once filled;
    /// `isFilled: false` before, and `isFilled: true` for a filled value of no content (`Void`).
    public var customMirror: Mirror {
        guard let value = peek() else {
            return Mirror(self, children: ["isFilled": false], displayStyle: .optional)
        }
        if Value.self == Void.self {
            return Mirror(self, children: ["isFilled": true], displayStyle: .optional)
        }
        return Mirror(self, children: ["value": value], displayStyle: .optional)
    }
}

extension Deferred: CustomReflectable {}
extension Future: CustomReflectable {}
extension Task: CustomReflectable {}
