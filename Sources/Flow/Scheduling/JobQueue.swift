/// A first-in, first-out queue of closures that reuses its storage: appending and popping are O(1)
/// amortised and a drained queue keeps its capacity, so steady traffic allocates nothing.
@usableFromInline
struct JobQueue {
    @usableFromInline
    var storage: ContiguousArray<() -> Void> = []
    @usableFromInline
    var head = 0

    @inlinable
    init() {}

    @inlinable
    var isEmpty: Bool { head == storage.count }

    @inlinable
    var count: Int { storage.count - head }

    @inlinable
    mutating func append(_ job: @escaping () -> Void) {
        storage.append(job)
    }

    @inlinable
    mutating func popFirst() -> (() -> Void)? {
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
    mutating func takeAll() -> JobQueue {
        if isEmpty { return JobQueue() }
        let taken = self
        self = JobQueue()
        return taken
    }
}
