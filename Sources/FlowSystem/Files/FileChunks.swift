import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// The chunks of an ``OpenFile``; see ``OpenFile/chunks(size:)``.
public struct FileChunks: AsyncSequence, Sendable {
    /// A chunk of bytes, never empty.
    public typealias Element = [UInt8]

    /// How many chunks are read ahead of the consumer, at most (being read or waiting to be taken): 16,
    /// 1 MiB with 64 KiB chunks. The arrays made ready for the next reads count too, so the memory a
    /// sequence holds beyond the chunk its consumer has stays within that many chunks.
    public static let readAheadLimit = 16

    /// How many chunks one read fills (one `preadv` call), at most.
    static let chunksPerRead = 4

    /// How many reads of a regular file run at the same time, on as many pool threads, at most.
    static let readsAtOnce = 2

    let file: OpenFile
    let size: Int

    /// Makes the iterator, which starts reading when first asked for a chunk.
    public func makeAsyncIterator() -> Iterator {
        Iterator(reader: ChunkReader(file: file, size: size))
    }

    /// Hands out the chunks read ahead, in order. Dropping it stops the reading.
    public struct Iterator: AsyncIteratorProtocol {
        /// The error `next()` throws.
        public typealias Failure = any Error

        let reader: ChunkReader
        private let stopper: ChunkReader.Stopper

        init(reader: ChunkReader) {
            self.reader = reader
            stopper = ChunkReader.Stopper(reader)
        }

        /// The next chunk, or `nil` at the end of the file. Throws `CancellationError` once the task is
        /// cancelled (and the reading stops), or the error of a read that failed.
        public mutating func next() async throws -> [UInt8]? {
            try await reader.next(isolation: nil)
        }

        /// The next chunk, or `nil` at the end of the file, without leaving the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
            try await reader.next(isolation: actor)
        }
    }
}

/// Reads a file's chunks ahead of the consumer and hands them out in order.
///
/// At most ``FileChunks/readAheadLimit`` chunks are being read or waiting to be taken. Each read fills
/// up to ``FileChunks/chunksPerRead`` chunks in one call (`preadv` at an offset, for a file that can
/// seek; `readv` at the position, for a pipe or a terminal). A regular file has up to
/// ``FileChunks/readsAtOnce`` reads of consecutive ranges running at the same time, each in a job on
/// libuv's thread pool; their chunks are handed over in the order of the file, straight to a waiting
/// consumer (no hop through the loop). A job that finished a read goes on with the next range while
/// there is room, so a consumer that keeps up costs no new job; taking a chunk that makes room starts a
/// job again if fewer than that many run. A short read of a regular file (its end, or a file truncated
/// meanwhile) drops what the reads after it found and reads again from where it stopped, so no byte is
/// skipped; a read that finds nothing ends the sequence and moves the position there.
final class ChunkReader: Sendable {
    /// A range claimed by a job.
    struct Claim {
        /// Its place in the order of hand-over.
        var sequence: Int
        /// Where it starts, or `nil` to read at the position.
        var offset: Int64?
        /// How many chunks it fills at most.
        var count: Int
        /// The arrays it fills, of the chunk size each (until the read takes them).
        var buffers: [[UInt8]]
    }

    /// What a read found.
    enum Outcome {
        /// Chunks, the bytes they hold, and whether the read filled fewer bytes than asked.
        case chunks([[UInt8]], bytes: Int, isShort: Bool)
        /// The end of the file.
        case end
        /// The read failed.
        case failure(any Error)
    }

    private struct State {
        /// Handed over in order, not taken yet.
        var ready: [[UInt8]] = []
        /// Where the next claimed read starts, or `nil` for a file read at its position.
        var nextOffset: Int64?
        /// The sequence number of the next claim.
        var claimed = 0
        /// The sequence number of the next read to hand over; reads below it that still arrive are
        /// stale (after a short read, an end or a failure) and are dropped.
        var handed = 0
        /// Reads finished ahead of their turn.
        var parked: [(claim: Claim, outcome: Outcome)] = []
        /// Chunks of claimed reads not handed over yet.
        var chunksInFlight = 0
        /// Arrays of the chunk size for reads to fill, made by the consumer (see ``ChunkReader``).
        var spares: [[UInt8]] = []
        /// Pool jobs submitted or running.
        var jobs = 0
        /// What the consumer gets after the ready chunks: the end (`nil`), or a failure.
        var ending: Swift.Result<[UInt8]?, any Error>?
        /// A consumer waiting for the next chunk.
        var consumer: UnsafeContinuation<[UInt8]?, any Error>?
        /// Whether the iterator was dropped or its task cancelled: no more reads.
        var isStopped = false
        /// Waiting for the jobs to finish (tests).
        var idleWaiters: [UnsafeContinuation<Void, Never>] = []
    }

    private let file: OpenFile
    private let size: Int
    private let state: Locked<State>

    init(file: OpenFile, size: Int) {
        self.file = file
        self.size = size
        let position = file.whileOpen { lseek(file.descriptor, 0, SEEK_CUR) } ?? -1
        var initial = State()
        initial.nextOffset = position >= 0 ? Int64(position) : nil
        state = Locked(initial)
    }

    /// Stops the reading when the last copy of an iterator goes away.
    final class Stopper: Sendable {
        let reader: ChunkReader

        init(_ reader: ChunkReader) { self.reader = reader }

        deinit { reader.stop(failing: nil) }
    }

    func next(isolation actor: isolated (any Actor)?) async throws -> [UInt8]? {
        if Task.isCancelled {
            // A sequence that has ended stays ended: `nil` again, as for any iterator past its end.
            let hasEnded = state.withLock { state -> Bool in
                guard state.ready.isEmpty, case .success(nil)? = state.ending else { return false }
                return true
            }
            if hasEnded { return nil }
            stop(failing: CancellationError())
            throw CancellationError()
        }
        // Once closed, the descriptor's number may name another file: read nothing more through it.
        if !file.isStillOpen {
            let closed = EventLoop.error(UV_EBADF.rawValue)
            stop(failing: closed)
            throw closed
        }
        // A chunk read ahead is handed out without suspending the task.
        if let ready = state.withLock({ Self.takeReady(&$0) }) {
            startJobs()
            return try ready.get()
        }
        // A main-actor consumer resumes in the main loop's context: the main loop's run() waits for it.
        let isMainActorWait = EventLoop.beginMainActorWait(actor)
        defer { EventLoop.endMainActorWait(isMainActorWait) }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<[UInt8]?, any Error>) in
                let ready = state.withLock { state -> Swift.Result<[UInt8]?, any Error>? in
                    if let ready = Self.takeReady(&state) { return ready }
                    state.consumer = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
                startJobs()
            }
        } onCancel: {
            stop(failing: CancellationError())
        }
    }

    /// The first ready chunk, or the ending once every chunk was taken.
    private static func takeReady(_ state: inout State) -> Swift.Result<[UInt8]?, any Error>? {
        guard !state.ready.isEmpty else { return state.ending }
        return .success(state.ready.removeFirst())
    }

    /// Whether a job could claim a range now: nothing ended, and spare arrays for a whole read.
    private static func canClaim(_ state: State) -> Bool {
        // At the position, one read at a time: two would take the bytes in an unknown order.
        !state.isStopped && state.ending == nil && state.spares.count >= FileChunks.chunksPerRead
            && (state.nextOffset != nil || state.chunksInFlight == 0)
    }

    /// Claims the next range to read, with spare arrays for it, if ``canClaim(_:)``.
    private func claimRange(_ state: inout State) -> Claim? {
        guard Self.canClaim(state) else { return nil }
        let count = FileChunks.chunksPerRead
        let claim = Claim(
            sequence: state.claimed, offset: state.nextOffset, count: count, buffers: Array(state.spares.suffix(count)))
        state.spares.removeLast(count)
        state.claimed += 1
        state.chunksInFlight += count
        state.nextOffset = state.nextOffset.map { $0 + Int64(count * size) }
        return claim
    }

    /// Makes spare arrays up to the read-ahead limit (counting the chunks ready and in flight), on the
    /// consumer's thread, right after it dropped its previous chunk: the allocator can hand that block
    /// back at once, still present and warm, rather than memory freed in bulk and faulted in again.
    private func makeSpares(_ state: inout State) {
        guard !state.isStopped, state.ending == nil else { return }
        while state.ready.count + state.chunksInFlight + state.spares.count < FileChunks.readAheadLimit {
            // Uninitialised: a read fills it before anyone sees it, and what it does not fill is cut off.
            state.spares.append([UInt8](unsafeUninitializedCapacity: size) { _, count in count = size })
        }
    }

    /// On the consumer's thread: makes spare arrays, and starts as many jobs as may run while there is a
    /// range to read. Each job claims its ranges itself, on its pool thread.
    private func startJobs() {
        while state.withLock({ state -> Bool in
            makeSpares(&state)
            let most = state.nextOffset == nil ? 1 : FileChunks.readsAtOnce
            guard state.jobs < most, Self.canClaim(state) else { return false }
            state.jobs += 1
            return true
        }) {
            let job = PoolJob(run: { [self] in runJob() }, didFinish: {}, didCancel: { [self] in
                // The pool refused the job (the loop is closing).
                _ = finish(nil, refused: true)
            })
            let loop = file.loop
            loop.inContext { job.submit(on: loop) }
        }
    }

    /// On a pool thread: reads ranges and hands them over while there is a range to claim.
    private func runJob() {
        var next = finish(nil)
        while var claim = next {
            // In use while it reads: a close meanwhile waits, and one before it makes the read fail.
            let outcome = file.whileOpen { read(&claim) } ?? .failure(EventLoop.error(UV_EBADF.rawValue))
            next = finish((claim, outcome))
        }
    }

    /// Fills the claim's arrays, in one call.
    private func read(_ claim: inout Claim) -> Outcome {
        var chunks = claim.buffers
        claim.buffers = []   // the arrays are not shared while the read fills them
        let read = withUnsafeTemporaryAllocation(of: iovec.self, capacity: chunks.count) { slices -> Int in
            for index in chunks.indices {
                // The array's memory stays where it is while the array is not changed: the read fills it.
                chunks[index].withUnsafeMutableBytes { buffer in
                    slices[index] = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
                }
            }
            var read: Int
            repeat {
                read = claim.offset.map {
                    preadv(file.descriptor, slices.baseAddress, Int32(slices.count), off_t($0))
                } ?? readv(file.descriptor, slices.baseAddress, Int32(slices.count))
            } while read < 0 && errno == EINTR
            return read < 0 ? -Int(errno) : read
        }
        let count = chunks.count
        if read < 0 { return .failure(EventLoop.error(Int32(read))) }
        if read == 0 { return .end }
        // Keeps the chunks the read reached; the last one may be short (a pipe, the end of the file).
        let filled = (read + size - 1) / size
        chunks.removeSubrange(filled...)
        let last = read - (filled - 1) * size
        if last < size / 2 {
            chunks[filled - 1] = Array(chunks[filled - 1][..<last])
        } else {
            chunks[filled - 1].removeSubrange(last...)
        }
        return .chunks(chunks, bytes: read, isShort: read < count * size)
    }

    /// Hands over what a read found (if `done`), in the order of the file (parking it if an earlier read
    /// is still running), wakes a waiting consumer, and claims the job's next range; without one, the
    /// job ends. A job the pool `refused` ends the sequence with `EventLoopError.cancelledByClose`.
    private func finish(_ done: (claim: Claim, outcome: Outcome)?, refused: Bool = false) -> Claim? {
        typealias Step = (
            next: Claim?, consumer: UnsafeContinuation<[UInt8]?, any Error>?,
            ready: Swift.Result<[UInt8]?, any Error>?, idle: [UnsafeContinuation<Void, Never>]
        )
        let step = state.withLock { state -> Step in
            if let (claim, outcome) = done {
                if state.isStopped || claim.sequence < state.handed {
                    state.chunksInFlight -= claim.count   // stale, or nobody wants it
                } else {
                    state.parked.append((claim, outcome))
                    handOverInOrder(&state)
                }
            }
            if refused, !state.isStopped, state.ending == nil {
                state.ending = .failure(EventLoopError.cancelledByClose)
                state.spares.removeAll()
                dropReadsInFlight(&state)
            }
            let next = refused ? nil : claimRange(&state)
            if next == nil { state.jobs -= 1 }
            var idle: [UnsafeContinuation<Void, Never>] = []
            if state.jobs == 0 { swap(&idle, &state.idleWaiters) }
            guard let consumer = state.consumer, let ready = Self.takeReady(&state) else {
                return (next, nil, nil, idle)
            }
            state.consumer = nil
            return (next, consumer, ready, idle)
        }
        if let consumer = step.consumer, let ready = step.ready { consumer.resume(with: ready) }
        for waiter in step.idle { waiter.resume() }
        return step.next
    }

    /// Moves the parked reads whose turn it is to the ready chunks.
    private func handOverInOrder(_ state: inout State) {
        while let index = state.parked.firstIndex(where: { $0.claim.sequence == state.handed }) {
            let (claim, outcome) = state.parked.remove(at: index)
            state.handed += 1
            state.chunksInFlight -= claim.count
            switch outcome {
            case .chunks(let chunks, let bytes, let isShort):
                state.ready.append(contentsOf: chunks)
                if isShort, let offset = claim.offset {
                    // The end, or a file cut short: the reads after this one may have skipped bytes.
                    dropReadsInFlight(&state)
                    state.nextOffset = offset + Int64(bytes)
                }
            case .end:
                if let offset = claim.offset { _ = file.whileOpen { lseek(file.descriptor, off_t(offset), SEEK_SET) } }
                state.ending = .success(nil)
                state.spares.removeAll()
                dropReadsInFlight(&state)
            case .failure(let error):
                state.ending = .failure(error)
                state.spares.removeAll()
                dropReadsInFlight(&state)
            }
        }
    }

    /// Makes every read claimed and not handed over stale: it is dropped when it arrives.
    private func dropReadsInFlight(_ state: inout State) {
        for parked in state.parked { state.chunksInFlight -= parked.claim.count }
        state.parked.removeAll()
        state.handed = state.claimed
    }

    /// Stops the reading: no new read starts, the chunks read and the reads running are dropped, and a
    /// waiting consumer gets `error` (or the end, without one).
    func stop(failing error: (any Error)?) {
        let consumer = state.withLock { state -> UnsafeContinuation<[UInt8]?, any Error>? in
            guard !state.isStopped else { return nil }
            state.isStopped = true
            state.ready.removeAll()
            state.spares.removeAll()
            dropReadsInFlight(&state)
            state.ending = error.map { .failure($0) } ?? .success(nil)
            defer { state.consumer = nil }
            return state.consumer
        }
        if let error { consumer?.resume(throwing: error) } else { consumer?.resume(returning: [UInt8]?.none) }
    }

    /// Returns once no job of this reader is submitted or running (for tests).
    func waitUntilIdle() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let isIdle = state.withLock { state -> Bool in
                if state.jobs == 0 { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if isIdle { continuation.resume() }
        }
    }

    /// How many reads were claimed so far (for tests).
    var readsClaimed: Int { state.withLock { $0.claimed } }
}

