import Dispatch
import Flow
import Foundation

/// A place that runs closures: where ``FutureProtocol/upon(_:execute:)`` and the transforms built on
/// it run their work.
///
/// `submit(_:)` must be safe to call from any thread: a deferred value is filled on one thread and
/// submits its handlers to their executors from there. Dispatch queues, operation queues, run loops
/// and Flow's schedulers and event loops all qualify.
///
/// ```swift
/// final class ContextExecutor: Executor {
///     let context: ManagedContext
///     init(context: ManagedContext) { self.context = context }
///     func submit(_ body: @escaping @Sendable () -> Void) { context.perform(body) }
/// }
/// ```
public protocol Executor: AnyObject {
    /// Runs `body` on this executor, now or later.
    ///
    /// - Parameter body: the work to run; it is released once it ran.
    @preconcurrency
    func submit(_ body: @escaping @Sendable () -> Void)

    /// Runs `workItem` on this executor, now or later.
    ///
    /// By default this submits a closure that performs the work item.
    func submit(_ workItem: DispatchWorkItem)
}

extension Executor {
    /// Runs `workItem` by submitting a closure that performs it.
    public func submit(_ workItem: DispatchWorkItem) {
        // A work item is thread-safe to perform from wherever the executor runs it.
        let item = UncheckedSendableWorkItem(workItem)
        submit { item.workItem.perform() }
    }
}

/// A work item carried into a `@Sendable` closure.
// @unchecked Sendable: `DispatchWorkItem` synchronises itself (libdispatch performs, cancels and
// notifies it from any thread); it is only missing the annotation.
struct UncheckedSendableWorkItem: @unchecked Sendable {
    let workItem: DispatchWorkItem

    init(_ workItem: DispatchWorkItem) {
        self.workItem = workItem
    }
}

/// The executor type `upon` takes by default: a Dispatch queue, as in Deferred.
public typealias PreferredExecutor = DispatchQueue

extension DispatchQueue: Executor {
    /// Runs `body` asynchronously on this queue.
    @inlinable
    @preconcurrency
    public func submit(_ body: @escaping @Sendable () -> Void) {
        // From a loop's work, counted as the loop's pending delivery until it ran: the loop's `run()`
        // waits for what it may send back.
        asyncDelivering(execute: body)
    }

    /// Runs `workItem` asynchronously on this queue.
    public func submit(_ workItem: DispatchWorkItem) {
        async(execute: workItem)
    }

    /// A concurrent queue for work that may run anywhere: the global queue of utility quality of
    /// service, as Deferred chose on Linux. It is the default executor of every `upon`, `map` and
    /// `andThen` that is given none.
    ///
    /// ```swift
    /// let count: Future<Int> = words.map(upon: .any()) { $0.count }
    /// ```
    @inlinable
    public static func any() -> DispatchQueue {
        .global(qos: .utility)
    }
}

extension OperationQueue: Executor {
    /// Adds `body` to this queue as an operation.
    @preconcurrency
    public func submit(_ body: @escaping @Sendable () -> Void) {
        addOperation(body)
    }
}

extension RunLoop: Executor {
    /// Schedules `body` on this run loop; it runs the next time the loop runs in its common modes.
    @preconcurrency
    public func submit(_ body: @escaping @Sendable () -> Void) {
        perform(body)
    }
}

/// An executor in a form that may cross threads.
// @unchecked Sendable: `Executor` is not `Sendable` because `RunLoop` is not, yet every executor's
// `submit(_:)` is thread-safe by the protocol's contract (Dispatch, OperationQueue and CFRunLoop each
// lock internally). The reference is only ever used to call `submit(_:)`.
@usableFromInline
struct ExecutorReference: @unchecked Sendable {
    @usableFromInline
    let executor: any Executor

    @inlinable
    init(_ executor: any Executor) {
        self.executor = executor
    }

    @inlinable
    func submit(_ body: @escaping @Sendable () -> Void) {
        executor.submit(body)
    }
}
