/// A value that is not `Sendable`, carried across isolation boundaries but used only on one loop:
/// every access checks that it runs in that loop's context.
///
/// Loop code often holds state that never leaves the loop's thread (a parser, a connection's buffers)
/// but passes through `@Sendable` callbacks on the way. `LoopBound` lets it through, and stops the
/// program with a message if it is ever touched elsewhere.
///
/// ```swift
/// let parser = LoopBound(RequestParser(), loop: loop)   // created on any thread
/// connection.onChunk(on: loop.scheduler) { bytes in parser.value.feed(bytes) }
/// ```
public struct LoopBound<Value>: @unchecked Sendable {
    // @unchecked Sendable: `storage` is only reached through accessors that check the loop context.
    private let storage: Value

    /// The loop the value belongs to.
    public let loop: EventLoop

    /// Wraps `value`. Callable from any thread: only ``value`` is confined to the loop, so a value
    /// made elsewhere (in a Dispatch queue, a task, another loop's work) can be handed to the loop this
    /// way, provided the caller keeps no other reference to it that it goes on using.
    ///
    /// ```swift
    /// let parser = LoopBound(RequestParser(), loop: flowLoop)   // from any thread
    /// flowLoop.execute { parser.value.reset() }
    /// ```
    public init(_ value: Value, loop: EventLoop) {
        storage = value
        self.loop = loop
    }

    /// The value; must be read in the loop's context.
    public var value: Value {
        loop.assertInLoopContext("LoopBound.value")
        return storage
    }
}

/// A mutable, non-`Sendable` value owned by one loop: like ``LoopBound``, but shared by reference so
/// that changes made in one callback are seen by the next.
///
/// ```swift
/// let requestCount = LoopBoundBox(0, loop: loop)
/// server.onRequest(on: loop.scheduler) { _ in requestCount.value += 1 }
/// ```
public final class LoopBoundBox<Value>: @unchecked Sendable {
    // @unchecked Sendable: `storage` is only reached through `value`, which checks the loop context.
    private var storage: Value

    /// The loop the value belongs to.
    public let loop: EventLoop

    /// Wraps `value`. Callable from any thread, like ``LoopBound/init(_:loop:)``: only ``value`` is
    /// confined to the loop; the box's initial value is published to the loop by whatever hands the
    /// box over (`execute`, a future, a handler installed through `performAndWait`).
    ///
    /// ```swift
    /// let requestCount = LoopBoundBox(0, loop: flowLoop)   // from a Dispatch queue, a task, ...
    /// flowLoop.execute { requestCount.value += 1 }
    /// ```
    public init(_ value: Value, loop: EventLoop) {
        storage = value
        self.loop = loop
    }

    /// The value; must be read and written in the loop's context.
    public var value: Value {
        get {
            loop.assertInLoopContext("LoopBoundBox.value")
            return storage
        }
        set {
            loop.assertInLoopContext("LoopBoundBox.value")
            storage = newValue
        }
    }
}
