import Flow
import NIOCore
import Synchronization

extension EventLoopFuture where Value: Sendable {
    /// This SwiftNIO future as a Flow future: it completes with the same value, or fails with the same
    /// error.
    ///
    /// The Flow future completes on the NIO future's loop, in the same turn; a callback registered on
    /// it from that loop's thread runs there with no hop (see ``NIOEventLoopScheduler``). Cancelling
    /// the Flow future completes it with `FutureError.aborted` at once; the NIO future, which has no
    /// cancellation, carries on and its result is ignored. To let cancellation reach the NIO code, make
    /// the Flow future with `Future(eventLoop:file:line:_:)`, which fails the NIO promise.
    ///
    /// ```swift
    /// func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    ///     let reply = database.query(sql).flowFuture()   // an EventLoopFuture from a NIO client
    ///     reply.map(render).onValue { context.writeAndFlush(wrapOutboundOut($0), promise: nil) }
    /// }
    /// ```
    public func flowFuture(file: StaticString = #fileID, line: UInt = #line) -> Flow.Future<Value> {
        FlowNIOBridge.install()
        return Flow.Future<Value>(on: .none, file: file, line: line) { completion in
            self.whenComplete { completion($0) }
            return NilDisposer()
        }
    }
}

extension Flow.Future {
    /// Creates a Flow future completed through a SwiftNIO promise on `eventLoop`: `body` gets the
    /// promise and hands it to NIO code, which succeeds or fails it.
    ///
    /// Cancelling the Flow future fails the promise with `FutureError.aborted`, so the NIO code that
    /// holds it (and whoever waits on `promise.futureResult`) learns that nobody wants the result. An
    /// error thrown by `body` fails both.
    ///
    /// ```swift
    /// let response = Future<HTTPResponse>(eventLoop: channel.eventLoop) { promise in
    ///     channel.writeAndFlush(RequestWithPromise(request, promise), promise: nil)
    /// }
    /// response.cancel()   // the promise fails with FutureError.aborted
    /// ```
    @preconcurrency
    public convenience init(
        eventLoop: any NIOCore.EventLoop,
        file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping @Sendable (EventLoopPromise<Value>) throws -> Void
    ) {
        FlowNIOBridge.install()
        self.init(on: .none, file: file, line: line) { completion in
            let promise = eventLoop.makePromise(of: Value.self, file: file, line: line)
            let settled = SettledFlag()
            promise.futureResult.whenComplete { result in
                settled.set()
                completion(result)
            }
            do {
                try body(promise)
            } catch {
                promise.fail(error)
            }
            return Disposer {
                // Also disposed after a normal completion: only a cancellation fails the promise.
                if !settled.isSet { promise.fail(FutureError.aborted) }
            }
        }
    }
}

/// Whether a NIO promise has completed, as seen from the Flow side.
private final class SettledFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
