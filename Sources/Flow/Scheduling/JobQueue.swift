/// A first-in, first-out queue of closures: see ``WorkQueue``.
@usableFromInline
typealias JobQueue = WorkQueue<() -> Void>

/// A first-in, first-out queue in a ring buffer that reuses its storage: appending and popping are
/// O(1) (amortised, for appending), a drained queue keeps its capacity, so steady traffic allocates
/// nothing, and a popped job is moved out, so queueing costs no reference counting.
///
/// Not copyable: two copies would share one buffer.
@usableFromInline
struct WorkQueue<Element>: ~Copyable {
    /// `capacity` slots (a power of two, or zero before the first append); the jobs are the `count`
    /// slots from `head` on, wrapping around.
    @usableFromInline var buffer: UnsafeMutablePointer<Element>?
    @usableFromInline var capacity = 0
    @usableFromInline var head = 0
    @usableFromInline var count = 0

    @inlinable
    init() {}

    @inlinable
    deinit {
        guard let buffer else { return }
        for offset in 0..<count {
            (buffer + ((head + offset) & (capacity - 1))).deinitialize(count: 1)
        }
        buffer.deallocate()
    }

    @inlinable
    var isEmpty: Bool { count == 0 }

    @inlinable @inline(__always)
    mutating func append(_ job: consuming Element) {
        if count == capacity { grow() }
        (buffer.unsafelyUnwrapped + ((head + count) & (capacity - 1))).initialize(to: job)
        count += 1
    }

    @inlinable
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let job = (buffer.unsafelyUnwrapped + head).move()
        head = (head + 1) & (capacity - 1)
        count -= 1
        return job
    }

    /// Doubles the capacity, moving the jobs to the start of a new buffer in order.
    @usableFromInline
    mutating func grow() {
        let newCapacity = Swift.max(16, capacity * 2)
        let newBuffer = UnsafeMutablePointer<Element>.allocate(capacity: newCapacity)
        if let buffer {
            let untilEnd = Swift.min(count, capacity - head)
            newBuffer.moveInitialize(from: buffer + head, count: untilEnd)
            (newBuffer + untilEnd).moveInitialize(from: buffer, count: count - untilEnd)
            buffer.deallocate()
        }
        buffer = newBuffer
        capacity = newCapacity
        head = 0
    }

    /// Moves every queued job out, leaving this queue empty.
    @inlinable
    mutating func takeAll() -> WorkQueue {
        var taken = WorkQueue()
        if !isEmpty { swap(&self, &taken) }
        return taken
    }
}
