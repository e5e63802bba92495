import Flow
import NIOCore
import Synchronization

extension Flow.Future {
    /// This Flow future as a SwiftNIO future on `eventLoop`: it succeeds with the same value or fails
    /// with the same error.
    ///
    /// A cancelled Flow future (its result is `FutureError.aborted`) fails the NIO future with
    /// `FutureError.aborted`. A Flow future that is let go of without ever completing fails it the same
    /// way, rather than leaving NIO code waiting on a promise nobody will complete. A future that has
    /// already completed gives an already completed NIO future, with no hop.
    ///
    /// ```swift
    /// // In a Vapor or Hummingbird route that wants an EventLoopFuture:
    /// return userStore.user(id).map(\.name).eventLoopFuture(on: request.eventLoop)
    /// ```
    public func eventLoopFuture(on eventLoop: any NIOCore.EventLoop) -> EventLoopFuture<Value> {
        FlowNIOBridge.install()
        if let result {
            return eventLoop.makeCompletedFuture(result)
        }
        let completer = PromiseCompleter(eventLoop.makePromise(of: Value.self))
        onResult(on: .none) { completer.complete(with: $0) }
        return completer.futureResult
    }
}

/// Completes a NIO promise once, and fails it with `FutureError.aborted` if it is released uncompleted:
/// NIO reports a promise that is never completed as a leak.
private final class PromiseCompleter<Value: Sendable>: Sendable {
    private let promise: EventLoopPromise<Value>
    private let isCompleted = Atomic<Bool>(false)

    init(_ promise: EventLoopPromise<Value>) { self.promise = promise }

    var futureResult: EventLoopFuture<Value> { promise.futureResult }

    func complete(with result: Flow.Result<Value>) {
        isCompleted.store(true, ordering: .releasing)
        promise.completeWith(result)
    }

    deinit {
        if !isCompleted.load(ordering: .acquiring) { promise.fail(FutureError.aborted) }
    }
}
