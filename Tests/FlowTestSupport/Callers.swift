import Dispatch
import Flow

/// Where a test calls an I/O entry point from: the loop it targets, or one of the three places that
/// are not that loop's context (issue "Every I/O entry point works from any thread and from async code").
public enum EntryPointCaller: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A job of the target loop itself.
    case theLoop
    /// A job of another loop, which blocks that loop's thread while a synchronous form waits.
    case anotherLoopsWork
    /// A block on a global Dispatch queue.
    case aDispatchQueue
    /// A detached task, off every loop.
    case aDetachedTask

    public var description: String { rawValue }

    /// Runs the synchronous `body` from this caller, for a loop running on a thread of its own, and
    /// returns what it returns or throws.
    public func call<Value: Sendable>(
        for loop: EventLoop, _ body: @escaping @Sendable () throws -> Value
    ) async throws -> Value {
        switch self {
        case .theLoop:
            return try await Self.resumed { loop.execute($0) }(body)
        case .anotherLoopsWork:
            let other = EventLoop.startOnNewThread(name: "test.otherLoop")
            defer { other.shutdown() }
            return try await Self.resumed { other.execute($0) }(body)
        case .aDispatchQueue:
            return try await Self.resumed { DispatchQueue.global().async(execute: $0) }(body)
        case .aDetachedTask:
            return try await Task.detached { try body() }.value
        }
    }

    /// A function that runs its body through `submit` and hands the result to the awaiting task.
    private static func resumed<Value: Sendable>(
        _ submit: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) -> (@escaping @Sendable () throws -> Value) async throws -> Value {
        { body in
            try await withCheckedThrowingContinuation { continuation in
                submit { continuation.resume(with: Swift.Result { try body() }) }
            }
        }
    }
}
