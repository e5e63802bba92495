/// A value that is not `Sendable`, carried across isolation boundaries but used only on one loop:
/// every access checks that it runs in that loop's context.
///
/// Loop code often holds state that never leaves the loop's thread (a parser, a connection's buffers)
/// but passes through `@Sendable` callbacks on the way. `LoopBound` lets it through, and stops the
/// program with a message if it is ever touched elsewhere.
///
/// ```swift
/// let parser = LoopBound(RequestParser(), loop: loop)   // created on the loop
/// connection.onChunk(on: loop.scheduler) { bytes in parser.value.feed(bytes) }
/// ```
public struct LoopBound<Value>: @unchecked Sendable {
    // @unchecked Sendable: `storage` is only reached through accessors that check the loop context.
    private let storage: Value

    /// The loop the value belongs to.
    public let loop: EventLoop

    /// Wraps `value`; must be called in `loop`'s context.
    public init(_ value: Value, loop: EventLoop) {
        loop.assertInLoopContext("LoopBound.init")
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

    /// Wraps `value`; must be called in `loop`'s context.
    public init(_ value: Value, loop: EventLoop) {
        loop.assertInLoopContext("LoopBoundBox.init")
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
