import Flow
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension ThreadPool {
    /// The most threads libuv's pool has (`MAX_THREADPOOL_SIZE`).
    public static let maximumSize = 1024

    /// How many threads libuv's pool has (or will have): the size set with ``setSize(_:)``, else
    /// `UV_THREADPOOL_SIZE` from the environment as libuv reads it (clamped to 1...1024), else 4.
    ///
    /// libuv reads the size once, when the process first uses the pool; every thread then serves every
    /// loop. File operations, name lookups and ``run(on:mayBlock:_:)`` share them, so work that blocks
    /// for long (opening a FIFO nobody writes, a device, a blocking call of your own) can hold them all
    /// and leave the rest waiting: see ``blockingWorkLimit``.
    public static var size: Int {
        sizeState.withLock { $0.configuredSize } ?? sizeFromEnvironment
    }

    /// How many pool threads work that may block for long holds at once: half the pool, rounded down,
    /// and at least one. Such work (``run(on:mayBlock:_:)`` with `mayBlock: true`, and
    /// ``FileSystem/open(_:_:permissions:on:)`` of a FIFO or a character device) beyond this waits its
    /// turn in order, so that the other threads stay free for file operations and name lookups.
    ///
    /// Name lookups (FlowNet's `NameResolver`, and the `async` forms that take names) count against
    /// the same limit, so that a resolver that hangs and blocking work cannot fill the pool between
    /// them. With a pool of 1 thread nothing is left over: give the pool at least 2 (``setSize(_:)``)
    /// if anything may block.
    public static var blockingWorkLimit: Int { max(1, size / 2) }

    /// Sets how many threads libuv's pool has, before the process first uses it (libuv reads
    /// `UV_THREADPOOL_SIZE` once, then: this sets that variable). Call it at the start of the program.
    ///
    /// ```swift
    /// try ThreadPool.setSize(16)   // before any file operation, name lookup or pool work
    /// ```
    ///
    /// - Throws: ``ThreadPoolError/invalidSize(_:)`` for a size outside 1...``maximumSize``;
    ///   ``ThreadPoolError/alreadyStarted(size:)`` once this module has used the pool (a file
    ///   operation, ``run(on:mayBlock:_:)``): the pool keeps its size. A name lookup (FlowNet) also
    ///   starts the pool, unseen by this check, and then the new size is silently not applied.
    public static func setSize(_ size: Int) throws(ThreadPoolError) {
        guard (1...maximumSize).contains(size) else { throw .invalidSize(size) }
        let refusal = sizeState.withLock { state -> ThreadPoolError? in
            guard !state.isStarted else {
                return .alreadyStarted(size: state.configuredSize ?? sizeFromEnvironment)
            }
            setenv("UV_THREADPOOL_SIZE", "\(size)", 1)
            state.configuredSize = size
            return nil
        }
        if let refusal { throw refusal }
    }

    /// Records that the pool is (about to be) in use, so that its size no longer changes. Called before
    /// each submission to the pool; after the first, one atomic load.
    static func noteUse() {
        guard !isStarted.load(ordering: .acquiring) else { return }
        sizeState.withLock { state in
            if !state.isStarted, state.configuredSize == nil { state.configuredSize = sizeFromEnvironment }
            state.isStarted = true
        }
        isStarted.store(true, ordering: .releasing)
    }

    /// `UV_THREADPOOL_SIZE` read as libuv 1.44 reads it (`atoi`, 0 as 1, at most 1024), or 4.
    private static var sizeFromEnvironment: Int {
        guard let text = getenv("UV_THREADPOOL_SIZE") else { return 4 }
        return min(max(Int(atoi(text)), 1), maximumSize)
    }

    private struct SizeState {
        var configuredSize: Int?
        var isStarted = false
    }

    private static let sizeState = Locked(SizeState())
    private static let isStarted = Atomic<Bool>(false)
}

/// Why the pool's size was not changed.
public enum ThreadPoolError: Error, Hashable, CustomStringConvertible {
    /// The pool was already in use, with `size` threads: libuv sizes it once.
    case alreadyStarted(size: Int)
    /// The size asked for is not within 1...``ThreadPool/maximumSize``.
    case invalidSize(Int)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .alreadyStarted(let size):
            return "the thread pool is already in use with \(size) threads; set its size before the first file operation, name lookup or pool work"
        case .invalidSize(let size):
            return "the thread pool has 1 to \(ThreadPool.maximumSize) threads, not \(size)"
        }
    }
}
