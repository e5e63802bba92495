#if canImport(Glibc)
import Glibc
#endif

/// A first-in, first-out queue of closures: see ``WorkQueue``.
@usableFromInline
typealias JobQueue = WorkQueue<() -> Void>

/// A first-in, first-out queue in a ring buffer that reuses its storage: appending and popping are
/// O(1) (amortised, for appending), a drained queue keeps its capacity, so steady traffic allocates
/// nothing, and a popped job is moved out, so queueing costs no reference counting.
///
/// Not copyable: two copies would share one buffer. Its elements must be bitwise movable (closures
/// and jobs are), because growing moves them with `realloc`. They may be non-copyable themselves
/// (the loop's jobs are, so that each runs once).
@usableFromInline
struct WorkQueue<Element: ~Copyable>: ~Copyable {
    /// `capacity` slots (a power of two, or zero before the first append); the jobs are the `count`
    /// slots from `head` on, wrapping around.
    @usableFromInline var buffer: UnsafeMutablePointer<Element>?
    @usableFromInline var capacity = 0
    @usableFromInline var head = 0
    @usableFromInline var count = 0

    /// An empty queue. Non-copyable elements cannot be checked for being bitwise movable here: the
    /// loop's (`EventLoop.LoopWork`) are two plain words.
    @inlinable
    init() {}

    @inlinable
    deinit {
        guard let buffer else { return }
        for offset in 0..<count {
            (buffer + ((head + offset) & (capacity - 1))).deinitialize(count: 1)
        }
        free(buffer)
    }

    @inlinable
    var isEmpty: Bool { count == 0 }

    @inlinable @inline(__always)
    mutating func append(_ job: consuming Element) {
        if count == capacity { grow() }
        (buffer.unsafelyUnwrapped + ((head &+ count) & (capacity &- 1))).initialize(to: job)
        count &+= 1
    }

    @inlinable
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let job = (buffer.unsafelyUnwrapped + head).move()
        head = (head &+ 1) & (capacity &- 1)
        count &-= 1
        return job
    }

    /// Doubles the capacity. The buffer is grown in place where the allocator can (`realloc`, which
    /// for large buffers remaps pages instead of copying them), then the jobs that had wrapped around
    /// to the start are moved after the old end, so that they follow on from `head` again.
    @usableFromInline
    mutating func grow() {
        let newCapacity = Swift.max(16, capacity * 2)
        let stride = MemoryLayout<Element>.stride
        guard let raw = realloc(buffer.map(UnsafeMutableRawPointer.init), newCapacity * stride) else {
            fatalError("WorkQueue: out of memory growing to \(newCapacity) jobs")
        }
        let newBuffer = raw.assumingMemoryBound(to: Element.self)
        // The jobs before `head`, if any, wrapped around: they go right after the old end.
        let wrapped = count - Swift.min(count, capacity - head)
        if wrapped > 0 {
            (newBuffer + capacity).moveInitialize(from: newBuffer, count: wrapped)
        }
        buffer = newBuffer
        capacity = newCapacity
    }

    /// Moves every queued job out, leaving this queue empty.
    @inlinable
    mutating func takeAll() -> WorkQueue {
        var taken = WorkQueue()
        if !isEmpty { swap(&self, &taken) }
        return taken
    }
}

extension WorkQueue where Element: Copyable {
    /// An empty queue, checking (in debug builds) that its elements can be moved by `realloc`.
    @inlinable
    init() {
        assert(_isBitwiseTakable(Element.self), "WorkQueue: \(Element.self) cannot be moved by realloc")
    }
}
