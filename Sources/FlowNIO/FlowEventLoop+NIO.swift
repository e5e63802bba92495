import Dispatch
import Flow
import NIOCore

/// A Flow `EventLoop` seen through SwiftNIO's `EventLoop` protocol, for NIO code that only needs
/// a place to schedule work: promises, futures, `execute`, `scheduleTask`.
///
/// Work runs on the Flow loop's thread, in the order submitted; `inEventLoop` is true there. It is not
/// a loop NIO can run channels on (sockets belong to NIO's own loops), and it cannot be shut down
/// through NIO: the Flow loop belongs to whoever started it, so `shutdownGracefully` reports
/// `EventLoopError.unsupportedOperation`.
///
/// ```swift
/// let loop = Flow.EventLoop.startOnNewThread(name: "worker")
/// let nioLoop = loop.nioEventLoop
/// let answer: EventLoopFuture<Int> = nioLoop.submit { 6 * 7 }   // runs on the Flow loop
/// ```
public final class FlowNIOEventLoop: NIOCore.EventLoop, CustomStringConvertible {
    /// The Flow loop that runs this loop's work.
    public let flowLoop: Flow.EventLoop

    init(_ flowLoop: Flow.EventLoop) {
        self.flowLoop = flowLoop
    }

    /// Whether the calling thread is running the Flow loop.
    public var inEventLoop: Bool { flowLoop.isInLoopContext }

    /// Runs `task` on the Flow loop.
    @preconcurrency
    public func execute(_ task: @escaping @Sendable () -> Void) {
        flowLoop.execute(task)
    }

    /// Runs `task` on the Flow loop at `deadline` (on NIO's clock), unless the returned `Scheduled` is
    /// cancelled first.
    @preconcurrency
    public func scheduleTask<T>(deadline: NIODeadline, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let now = NIODeadline.now()
        let delay = deadline > now ? deadline - now : .zero
        return scheduleTask(in: delay, task)
    }

    /// Runs `task` on the Flow loop once `delay` has passed, on the loop's own timer, unless the returned
    /// `Scheduled` is cancelled first.
    @preconcurrency
    public func scheduleTask<T>(in delay: TimeAmount, _ task: @escaping @Sendable () throws -> T) -> Scheduled<T> {
        let promise = makePromise(of: T.self)
        let timer = flowLoop.execute(after: Double(max(0, delay.nanoseconds)) / 1e9) {
            // On the loop's own thread, where the promise lives: its value need not be Sendable.
            do {
                promise.assumeIsolated().succeed(try task())
            } catch {
                promise.fail(error)
            }
        }
        return Scheduled(promise: promise, cancellationTask: { timer.dispose() })
    }

    /// Stops the program with a message unless called on the Flow loop's thread.
    public func preconditionInEventLoop(file: StaticString, line: UInt) {
        misusePrecondition(inEventLoop, "\(self): expected to run on the loop's thread", file: file, line: line)
    }

    /// Stops the program with a message if called on the Flow loop's thread.
    public func preconditionNotInEventLoop(file: StaticString, line: UInt) {
        misusePrecondition(!inEventLoop, "\(self): expected not to run on the loop's thread", file: file, line: line)
    }

    /// This loop (a loop is a group of one).
    public func next() -> any NIOCore.EventLoop { self }

    /// This loop (a loop is a group of one).
    public func any() -> any NIOCore.EventLoop { self }

    /// An iterator over this loop alone.
    public func makeIterator() -> EventLoopIterator { EventLoopIterator([self]) }

    /// Reports `EventLoopError.unsupportedOperation` on `queue`: stop the Flow loop through Flow
    /// (`EventLoop.shutdown()`), which owns it.
    @preconcurrency
    public func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable (Error?) -> Void) {
        queue.async { callback(NIOCore.EventLoopError.unsupportedOperation) }
    }

    /// Names the Flow loop.
    public var description: String { "FlowNIOEventLoop(\(flowLoop.name))" }
}

extension Flow.EventLoop {
    /// This loop as a SwiftNIO `EventLoop` (the same object on every call while it is in use), for NIO
    /// code that needs somewhere to run work and complete promises: see ``FlowNIOEventLoop``.
    public var nioEventLoop: FlowNIOEventLoop {
        let key = ObjectIdentifier(self)
        return FlowNIOEventLoop.adapters.withLock { adapters in
            if let existing = adapters[key]?.adapter, existing.flowLoop === self { return existing }
            if adapters.count > 64 { adapters = adapters.filter { $0.value.adapter != nil } }
            let made = FlowNIOEventLoop(self)
            adapters[key] = WeakAdapter(adapter: made)
            return made
        }
    }
}

extension FlowNIOEventLoop {
    fileprivate static let adapters = Locked<[ObjectIdentifier: WeakAdapter]>([:])
}

/// A weak reference, so that the table of adapters keeps no loop alive.
private struct WeakAdapter: @unchecked Sendable {
    // @unchecked Sendable: only read and written under the lock of `FlowNIOEventLoop.adapters`.
    weak var adapter: FlowNIOEventLoop?
}
