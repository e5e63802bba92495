import CLibUV
import Flow
import FlowNet
import Synchronization

/// libuv's thread pool: the threads that run file-system requests, name lookups and your own blocking
/// work (`uv_queue_work`), so that the loop never waits. Four threads unless ``setSize(_:)`` or the
/// environment variable `UV_THREADPOOL_SIZE` says otherwise (read once, at the first use in the
/// process): see ``size``. Work that may block for long holds at most ``blockingWorkLimit`` of them.
///
/// ```swift
/// ThreadPool.run(on: loop) { try compressLargeFile(at: path) }
///     .onValue { size in print("compressed to \(size) bytes") }   // back on the loop
/// ```
public enum ThreadPool {
    /// Runs `work` on one of the pool's threads and completes the future with its result on `loop`.
    /// Cancelling the future before a thread has taken the work keeps it from running; work already
    /// running finishes, and its result is dropped. Callable from any thread.
    ///
    /// Work that may block for long (waiting for a lock, a device, another process, the network)
    /// should say so with `mayBlock: true`: it then holds at most ``blockingWorkLimit`` pool threads at
    /// once and otherwise waits its turn, so that it cannot take every thread and stall the process's
    /// file operations and name lookups. Work that only computes or reads local files needs not.
    ///
    /// ```swift
    /// let digest = ThreadPool.run { sha256(of: bytes) }   // bytes hashed off the loop
    /// let reply = ThreadPool.run(mayBlock: true) { try legacyClient.fetch() }
    /// ```
    ///
    /// - Parameters:
    ///   - loop: the loop the result is reported on.
    ///   - mayBlock: whether `work` may block for long; see above.
    ///   - work: a blocking closure; an error it throws fails the future.
    @preconcurrency
    public static func run<Value: Sendable>(
        on loop: EventLoop = .main, mayBlock: Bool = false, _ work: @escaping @Sendable () throws -> Value
    ) -> Future<Value> {
        let result = PendingResult<Value>()
        // Computed on a pool thread, reported from the loop.
        let computed = Locked<Result<Value>?>(nil)
        let job = PoolJob(
            run: { computed.withLock { $0 = Result { try work() } } },
            didFinish: { if let value = computed.withLock({ $0 }) { result.complete(value) } },
            didCancel: { result.fail(FutureError.aborted) },
            holdsBlockingSlot: mayBlock)
        if mayBlock {
            BlockingWorkLimiter.shared.whenSlotFree { loop.inContext { job.submit(on: loop) } }
        } else {
            loop.inContext { job.submit(on: loop) }
        }
        return result.future(onCancel: { loop.inContext { job.cancel() } })
    }
}

/// One `uv_work_t`: the type-erased work and what to do if libuv cancels it. Owned by libuv (through
/// `data`) from submission to the after-work callback.
final class PoolJob: @unchecked Sendable {
    // @unchecked Sendable: `isSubmitted` and `isCancelled` are used only on the loop; `run` is called on
    // a pool thread while the loop waits for the after-work callback, and the closures are Sendable.
    private let request = UnsafeMutablePointer<uv_work_t>.allocate(capacity: 1)
    private let run: @Sendable () -> Void
    private let didFinish: @Sendable () -> Void
    private let didCancel: @Sendable () -> Void
    private var isSubmitted = false
    private var isCancelled = false
    /// Whether the job holds one of ``BlockingWorkLimiter``'s slots, given back when libuv is done.
    private let holdsBlockingSlot: Bool

    init(
        run: @escaping @Sendable () -> Void, didFinish: @escaping @Sendable () -> Void,
        didCancel: @escaping @Sendable () -> Void, holdsBlockingSlot: Bool = false
    ) {
        self.run = run
        self.didFinish = didFinish
        self.didCancel = didCancel
        self.holdsBlockingSlot = holdsBlockingSlot
    }

    private func releaseSlot() {
        if holdsBlockingSlot { BlockingWorkLimiter.shared.release() }
    }

    deinit {
        request.deallocate()
    }

    func submit(on loop: EventLoop) {
        guard !isCancelled else {
            releaseSlot()
            return
        }
        ThreadPool.noteUse()
        request.pointee.data = Owner.retain(self)
        let status = uv_queue_work(loop.unsafeLoopPointer, request, { request in
            Owner.borrow(request?.pointee.data, as: PoolJob.self).run()
        }, { request, status in
            let job = Owner.release(request?.pointee.data, as: PoolJob.self)
            job.isSubmitted = false
            job.releaseSlot()
            if status == UV_ECANCELED.rawValue { job.didCancel() } else { job.didFinish() }
        })
        guard status == 0 else {
            _ = Owner.release(request.pointee.data, as: PoolJob.self)
            releaseSlot()
            didCancel()
            return
        }
        isSubmitted = true
        loop.libuvStateDidChange()
    }

    /// Takes the work back from the pool's queue if no thread has started it (`uv_cancel`).
    func cancel() {
        isCancelled = true
        if isSubmitted {
            _ = request.withMemoryRebound(to: uv_req_t.self, capacity: 1) { uv_cancel($0) }
        }
    }
}
