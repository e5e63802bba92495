import Dispatch
import Flow

extension Flow.Scheduler: Executor {
    /// Runs `body` on this scheduler: at once when the caller already executes on it, otherwise
    /// later, in the order submitted (see `Scheduler.async(execute:)`).
    @inlinable
    @preconcurrency
    public func submit(_ body: @escaping @Sendable () -> Void) {
        async(execute: body)
    }
}

extension Flow.EventLoop: Executor {
    /// Runs `body` on this loop after the work already queued, never before returning (see
    /// `EventLoop.execute(_:)`).
    @inlinable
    @preconcurrency
    public func submit(_ body: @escaping @Sendable () -> Void) {
        execute(body)
    }
}

/// The executor used when the caller names none: Deferred's own default, a concurrent background queue
/// (`DispatchQueue.any()`), wherever the caller runs. Code on an event loop that wants its
/// closures back on the loop names it: `upon(loop)`, `upon(Scheduler.main)`.
@inlinable
func defaultExecutor() -> any Executor {
    DispatchQueue.any()
}

/// Runs `body` at once on the thread that submits it: for this library's own bookkeeping handlers,
/// which only fill other deferred values and never run user code themselves.
@usableFromInline
final class InlineExecutor: Executor, Sendable {
    @usableFromInline
    static let shared = InlineExecutor()

    @inlinable
    func submit(_ body: @escaping @Sendable () -> Void) {
        body()
    }
}
