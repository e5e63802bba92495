/// A first-in, first-out queue of closures: see ``WorkQueue``.
@usableFromInline
typealias JobQueue = WorkQueue<() -> Void>

/// A first-in, first-out queue that reuses its storage: appending and popping are O(1) amortised and
/// a drained queue keeps its capacity, so steady traffic allocates nothing.
@usableFromInline
struct WorkQueue<Element> {
    @usableFromInline
    var storage: ContiguousArray<Element> = []
    @usableFromInline
    var head = 0

    @inlinable
    init() {}

    @inlinable
    var isEmpty: Bool { head == storage.count }

    @inlinable
    var count: Int { storage.count - head }

    @inlinable
    mutating func append(_ job: Element) {
        storage.append(job)
    }

    @inlinable
    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let job = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= storage.count {
            // Long-lived queues that never fully drain would otherwise grow without bound.
            storage.removeFirst(head)
            head = 0
        }
        return job
    }

    /// Moves every queued job out, leaving this queue empty.
    @inlinable
    mutating func takeAll() -> WorkQueue {
        if isEmpty { return WorkQueue() }
        let taken = self
        self = WorkQueue()
        return taken
    }
}
