import CLibUV
import Flow
import FlowNet

#if canImport(Glibc)
import Glibc
#endif

/// ``FileSystem/open(_:_:permissions:on:)`` on the pool, keeping opens that may block from taking
/// every pool thread: opening a FIFO waits for the other end, and a device (a terminal, a serial
/// line) may wait too, for as long as nobody comes; four of them held all of libuv's default pool.
///
/// A pool thread looks at the path first (`stat`, following links): anything but a FIFO or a
/// character device it opens at once, as `uv_fs_open` would; those it hands back, and the open runs
/// again as work that may block, under ``ThreadPool/blockingWorkLimit``. (A path replaced by a FIFO
/// between the two calls is opened directly: the check narrows the hazard, it cannot close it.)
enum PathOpening {
    /// What one attempt came to.
    private enum Outcome: Sendable {
        case opened(Int32)
        case failed(errno: Int32)
        /// A FIFO or a character device: to be opened as work that may block.
        case mayBlock
    }

    static func open(_ path: String, flags: Int32, permissions: Int32, on loop: EventLoop) -> Future<OpenFile> {
        guard path.isWholeCString else { return Future(error: EventLoop.error(UV_EINVAL.rawValue)) }
        let result = PendingResult<OpenFile>()
        let attempt = LoopCarried(Attempt(path: path, flags: flags | O_CLOEXEC, permissions: permissions, loop: loop, result: result))
        loop.inContext { attempt.value.start(checkingFirst: true) }
        return result.future(onCancel: { loop.inContext { attempt.value.cancel() } })
    }

    /// One open: its current pool job, touched only on the loop.
    private final class Attempt: @unchecked Sendable {
        // @unchecked Sendable: `job` and `isCancelled` are used only on the loop's thread.
        let path: String
        let flags: Int32
        let permissions: Int32
        let loop: EventLoop
        let result: PendingResult<OpenFile>
        private var job: PoolJob?
        private var isCancelled = false

        init(path: String, flags: Int32, permissions: Int32, loop: EventLoop, result: PendingResult<OpenFile>) {
            self.path = path
            self.flags = flags
            self.permissions = permissions
            self.loop = loop
            self.result = result
        }

        func start(checkingFirst: Bool) {
            guard !isCancelled else { return }
            let outcome = Locked<Outcome?>(nil)
            let (path, flags, permissions) = (path, flags, permissions)
            let carried = LoopCarried(self)
            let job = PoolJob(
                run: {
                    outcome.withLock {
                        $0 = PathOpening.attempt(path, flags: flags, permissions: permissions, checkingFirst: checkingFirst)
                    }
                },
                didFinish: { carried.value.finished(outcome.withLock { $0 }) },
                didCancel: { carried.value.result.fail(FutureError.aborted) },
                holdsBlockingSlot: !checkingFirst)
            self.job = job
            if checkingFirst {
                job.submit(on: loop)
            } else {
                let loop = loop
                BlockingWorkLimiter.shared.whenSlotFree { loop.inContext { job.submit(on: loop) } }
            }
        }

        private func finished(_ outcome: Outcome?) {
            job = nil
            switch outcome {
            case .opened(let descriptor)?:
                // If the caller stopped waiting, the file is dropped here, and its `deinit` closes it.
                result.complete(.success(OpenFile(descriptor: descriptor, loop: loop)))
            case .failed(let code)?:
                result.fail(EventLoop.error(-code))
            case .mayBlock?:
                start(checkingFirst: false)
            case nil:
                result.fail(FutureError.aborted)
            }
        }

        func cancel() {
            isCancelled = true
            job?.cancel()
        }
    }

    /// On a pool thread: opens `path`, unless `checkingFirst` and it is a FIFO or a character device.
    private static func attempt(_ path: String, flags: Int32, permissions: Int32, checkingFirst: Bool) -> Outcome {
        if checkingFirst {
            var status = stat()
            if stat(path, &status) == 0 {
                let type = status.st_mode & S_IFMT
                if type == S_IFIFO || type == S_IFCHR { return .mayBlock }
            }
        }
        let descriptor = Glibc.open(path, flags, mode_t(permissions))
        return descriptor >= 0 ? .opened(descriptor) : .failed(errno: errno)
    }
}
