import Synchronization

/// Work to run on a loop at a deadline. Returned by ``EventLoop/execute(after:_:)`` as the
/// ``Disposable`` that cancels it.
final class ScheduledWork: Disposable, @unchecked Sendable {
    // @unchecked Sendable: `deadline`, `sequence` and `loop` are immutable; `heapIndex` and `job` are
    // touched only on the loop's thread (the owning `DeadlineQueue`); `state` is atomic and is the only
    // field other threads use.
    let deadline: UInt64
    let sequence: UInt64
    var heapIndex = -1
    var job: (() -> Void)?
    let loop: EventLoop
    let state = Atomic<UInt8>(ScheduledWork.pending)

    static let pending: UInt8 = 0
    static let fired: UInt8 = 1
    static let cancelled: UInt8 = 2

    init(deadline: UInt64, sequence: UInt64, loop: EventLoop, job: @escaping () -> Void) {
        self.deadline = deadline
        self.sequence = sequence
        self.loop = loop
        self.job = job
    }

    /// Cancels the work. Disposed on the loop's thread before it fired, it never fires; from another
    /// thread, it does not fire unless it was already firing.
    func dispose() {
        guard state.compareExchange(expected: ScheduledWork.pending, desired: ScheduledWork.cancelled,
                                    ordering: .acquiringAndReleasing).exchanged else { return }
        loop.removeCancelledWork(self)
    }

    @inline(__always)
    func precedes(_ other: ScheduledWork) -> Bool {
        deadline < other.deadline || (deadline == other.deadline && sequence < other.sequence)
    }
}

/// A binary min-heap of ``ScheduledWork`` by (deadline, sequence): O(log n) insertion, removal of the
/// earliest, and removal of any entry (each entry knows its index). Loop-thread only.
struct DeadlineQueue {
    private(set) var entries: ContiguousArray<ScheduledWork> = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var earliest: ScheduledWork? { entries.first }

    mutating func insert(_ work: ScheduledWork) {
        work.heapIndex = entries.count
        entries.append(work)
        siftUp(entries.count - 1)
    }

    mutating func remove(_ work: ScheduledWork) {
        let index = work.heapIndex
        guard index >= 0, index < entries.count, entries[index] === work else { return }
        let last = entries.removeLast()
        work.heapIndex = -1
        guard index < entries.count else { return }
        entries[index] = last
        last.heapIndex = index
        if index > 0 && last.precedes(entries[(index - 1) / 2]) {
            siftUp(index)
        } else {
            siftDown(index)
        }
    }

    mutating func popEarliest() -> ScheduledWork? {
        guard let first = entries.first else { return nil }
        remove(first)
        return first
    }

    mutating func removeAll() -> ContiguousArray<ScheduledWork> {
        let all = entries
        entries = []
        for work in all { work.heapIndex = -1 }
        return all
    }

    private mutating func siftUp(_ start: Int) {
        var index = start
        let moving = entries[index]
        while index > 0 {
            let parent = (index - 1) / 2
            guard moving.precedes(entries[parent]) else { break }
            entries[index] = entries[parent]
            entries[index].heapIndex = index
            index = parent
        }
        entries[index] = moving
        moving.heapIndex = index
    }

    private mutating func siftDown(_ start: Int) {
        var index = start
        let moving = entries[index]
        let count = entries.count
        while true {
            let left = 2 * index + 1
            guard left < count else { break }
            let right = left + 1
            let smaller = right < count && entries[right].precedes(entries[left]) ? right : left
            guard entries[smaller].precedes(moving) else { break }
            entries[index] = entries[smaller]
            entries[index].heapIndex = index
            index = smaller
        }
        entries[index] = moving
        moving.heapIndex = index
    }
}
