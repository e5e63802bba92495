import CLibUV
import Flow
import FlowNet

/// The C callback of every file-system request: hands the finished request to its owner.
private let fileSystemCallback: uv_fs_cb = { request in
    guard let request else { return }
    Owner.release(request.pointee.data, as: FileSystemRequest.self).complete(request)
}

/// One `uv_fs_t` request on libuv's thread pool, owned by libuv (through `data`) from submission to its
/// callback; its result turns into a future's.
final class FileSystemRequest: @unchecked Sendable {
    // @unchecked Sendable: `request`, `isSubmitted` and the closures are used only on the loop (`start`,
    // `cancel` and the callback run there).
    private let request = UnsafeMutablePointer<uv_fs_t>.allocate(capacity: 1)
    private let submit: (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<uv_fs_t>, uv_fs_cb) -> Int32
    /// Reports the finished request (success or failure) before libuv's memory is cleaned up.
    private let report: (UnsafeMutablePointer<uv_fs_t>) -> Void
    private let abandon: (EventLoopError) -> Void
    private let isAbandoned: () -> Bool
    /// Runs once libuv is done with the request, or once it is clear libuv will never have it.
    private var whenDone: (@Sendable () -> Void)?
    private var isSubmitted = false

    private init(
        submit: @escaping (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<uv_fs_t>, uv_fs_cb) -> Int32,
        report: @escaping (UnsafeMutablePointer<uv_fs_t>) -> Void,
        abandon: @escaping (EventLoopError) -> Void, isAbandoned: @escaping () -> Bool,
        whenDone: (@Sendable () -> Void)?
    ) {
        self.whenDone = whenDone
        self.submit = submit
        self.report = report
        self.abandon = abandon
        self.isAbandoned = isAbandoned
    }

    deinit {
        request.deallocate()
    }

    /// Submits a request on `loop` and returns its future. `submit` calls the `uv_fs_*` function with
    /// the loop, the request and the callback it is given; `finish` reads a successful result (the
    /// request's `result` is not negative) before libuv's memory is cleaned up. Cancelling the future
    /// takes a request back from the pool's queue if no thread has started it, unless `isCancellable`
    /// is `false` (a close, which must happen whoever stops waiting for it). Fails at once with
    /// `EINVAL` if one of `paths` holds a NUL byte: C would read the path only up to it, and act on
    /// another file. `whenDone` runs on the loop once libuv is done with the request (after the
    /// system call, or when it was taken back or never submitted), whatever became of the future.
    static func perform<Value: Sendable>(
        on loop: EventLoop, paths: [String] = [], isCancellable: Bool = true,
        whenDone: (@Sendable () -> Void)? = nil,
        submit: @escaping (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<uv_fs_t>, uv_fs_cb) -> Int32,
        finish: @escaping (UnsafeMutablePointer<uv_fs_t>) -> Result<Value>
    ) -> Future<Value> {
        guard paths.allSatisfy(\.isWholeCString) else {
            whenDone?()
            return Future(error: EventLoop.error(UV_EINVAL.rawValue))
        }
        let result = PendingResult<Value>()
        let operation = FileSystemRequest(submit: submit, report: { request in
            result.complete(request.pointee.result < 0
                ? .failure(EventLoop.error(Int32(request.pointee.result))) : finish(request))
        }, abandon: { error in result.fail(error) }, isAbandoned: { result.isCompleted }, whenDone: whenDone)
        let carried = LoopCarried(operation)
        loop.inContext { carried.value.start(on: loop) }
        guard isCancellable else { return result.future() }
        return result.future(onCancel: { loop.inContext { carried.value.cancel() } })
    }

    private func start(on loop: EventLoop) {
        guard !isAbandoned() else {
            done()
            return
        }
        ThreadPool.noteUse()
        request.pointee.data = Owner.retain(self)
        let status = submit(loop.unsafeLoopPointer, request, fileSystemCallback)
        guard status >= 0 else {
            _ = Owner.release(request.pointee.data, as: FileSystemRequest.self)
            uv_fs_req_cleanup(request)
            abandon(EventLoop.error(status))
            done()
            return
        }
        isSubmitted = true
        loop.libuvStateDidChange()
    }

    fileprivate func complete(_ request: UnsafeMutablePointer<uv_fs_t>) {
        isSubmitted = false
        report(request)
        uv_fs_req_cleanup(request)
        done()
    }

    /// Runs `whenDone`, once.
    private func done() {
        let whenDone = whenDone
        self.whenDone = nil
        whenDone?()
    }

    private func cancel() {
        abandon(EventLoopError.cancelledByClose)
        if isSubmitted {
            _ = request.withMemoryRebound(to: uv_req_t.self, capacity: 1) { uv_cancel($0) }
        }
    }
}

/// A value made on the calling thread and used by a job it queues on a loop; nothing else touches it.
struct LoopCarried<Value>: @unchecked Sendable {
    // @unchecked Sendable: handed over once, from the caller to the loop job, never shared.
    let value: Value

    init(_ value: Value) { self.value = value }
}
