import Flow

#if canImport(Glibc)
import Glibc
#endif

/// The chunks of an ``OpenFile``; see ``OpenFile/chunks(size:)``.
public struct FileChunks: AsyncSequence, Sendable {
    /// A chunk of bytes, never empty.
    public typealias Element = [UInt8]

    /// How many chunks are read ahead of the consumer, at most (being read or waiting to be taken).
    public static let readAheadLimit = 4

    let file: OpenFile
    let size: Int

    /// Makes the iterator, which starts reading when first asked for a chunk.
    public func makeAsyncIterator() -> Iterator { Iterator(reader: ChunkReader(file: file, size: size)) }

    /// Hands out the chunks read ahead, in order.
    public struct Iterator: AsyncIteratorProtocol {
        let reader: ChunkReader

        /// The next chunk, or `nil` at the end of the file.
        public mutating func next() async throws -> [UInt8]? {
            try await reader.next()
        }
    }
}

/// Reads a file's chunks ahead of the consumer, up to ``FileChunks/readAheadLimit`` of them, and hands
/// them out in order.
///
/// The reads run one after the other in a job on libuv's thread pool. While at most half that many
/// chunks wait, a read fills every chunk there is room for in one call, and hands them straight to a
/// waiting consumer: no hop through the loop per chunk, and a consumer that keeps up is woken once per
/// read, not per chunk. Taking a chunk that leaves half the read-ahead or less starts a new job. A
/// file that can seek (a regular file) is read at offsets from the position it had when the iteration
/// started, and its position is moved to the end once the end is found; a pipe or a terminal is read
/// at its position.
final class ChunkReader: Sendable {
    private struct State {
        /// Read and not taken yet.
        var waiting: [[UInt8]] = []
        /// Where the next read starts, or `nil` for a file read at its position.
        var nextOffset: Int64?
        /// Whether a pool job is reading.
        var isReading = false
        /// What the consumer gets after the waiting chunks: the end (`nil`), or a failure.
        var ending: Swift.Result<[UInt8]?, Error>?
        /// A consumer waiting for the next chunk.
        var consumer: CheckedContinuation<[UInt8]?, Error>?
    }

    private let file: OpenFile
    private let size: Int
    private let state: Locked<State>

    init(file: OpenFile, size: Int) {
        self.file = file
        self.size = max(size, 1)
        let position = lseek(file.descriptor, 0, SEEK_CUR)
        var initial = State()
        initial.nextOffset = position >= 0 ? Int64(position) : nil
        state = Locked(initial)
    }

    func next() async throws -> [UInt8]? {
        // A chunk read ahead is handed out without suspending the task.
        if let ready = state.withLock({ Self.takeReady(&$0) }) {
            startReading()
            return try ready.get()
        }
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, Error>) in
            let ready = state.withLock { state -> Swift.Result<[UInt8]?, Error>? in
                if let ready = Self.takeReady(&state) { return ready }
                state.consumer = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
            // A chunk was taken, or a consumer waits: either way reading may go on.
            startReading()
        }
    }

    /// The first waiting chunk, or the ending once every chunk was taken.
    private static func takeReady(_ state: inout State) -> Swift.Result<[UInt8]?, Error>? {
        if !state.waiting.isEmpty { return .success(state.waiting.removeFirst()) }
        return state.ending
    }

    /// Starts a pool job that reads, unless one is reading, more than half the read-ahead chunks wait, or
    /// the file has ended.
    private func startReading() {
        let starts = state.withLock { state -> Bool in
            guard !state.isReading, state.ending == nil, state.waiting.count <= FileChunks.readAheadLimit / 2 else {
                return false
            }
            state.isReading = true
            return true
        }
        guard starts else { return }
        let job = PoolJob(run: { [self] in readOnPool() }, didFinish: {}, didCancel: { [self] in
            // The pool refused the job (the loop is closing).
            hand([], .failure(EventLoopError.cancelledByClose))
        })
        let loop = file.loop
        loop.inContext { job.submit(on: loop) }
    }

    /// On a pool thread: reads until enough chunks wait or the file ends. Each read fills every chunk
    /// there is room for in one call (`preadv`, or `readv` at the position), and the chunks are handed
    /// over together: fewer calls, and fewer wake-ups of a waiting consumer.
    private func readOnPool() {
        while true {
            let room = state.withLock { state -> (count: Int, offset: Int64?)? in
                guard state.ending == nil, state.waiting.count <= FileChunks.readAheadLimit / 2 else {
                    state.isReading = false
                    return nil
                }
                return (FileChunks.readAheadLimit - state.waiting.count, state.nextOffset)
            }
            guard let room else { return }
            var chunks: [[UInt8]] = []
            var slices: [iovec] = []
            chunks.reserveCapacity(room.count)
            slices.reserveCapacity(room.count)
            for _ in 0..<room.count {
                // The array's memory stays where it is while the array is not changed: the read fills it.
                var base: UnsafeMutableRawPointer?
                chunks.append([UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                    base = UnsafeMutableRawPointer(buffer.baseAddress!)
                    count = size
                })
                slices.append(iovec(iov_base: base, iov_len: size))
            }
            var read: Int
            repeat {
                read = slices.withUnsafeBufferPointer { slices in
                    room.offset.map { preadv(file.descriptor, slices.baseAddress, Int32(slices.count), off_t($0)) }
                        ?? readv(file.descriptor, slices.baseAddress, Int32(slices.count))
                }
            } while read < 0 && errno == EINTR
            if read < 0 {
                hand([], .failure(EventLoop.error(-errno)))
                return
            }
            if read == 0 {
                if let position = room.offset { _ = lseek(file.descriptor, off_t(position), SEEK_SET) }
                hand([], .success(nil))
                return
            }
            // Keeps the chunks the read reached; the last one may be short (a pipe, the end of the file).
            let filled = (read + size - 1) / size
            chunks.removeSubrange(filled...)
            let last = read - (filled - 1) * size
            if last < size / 2 {
                chunks[filled - 1] = Array(chunks[filled - 1][..<last])
            } else {
                chunks[filled - 1].removeSubrange(last...)
            }
            hand(chunks, nil)
        }
    }

    /// Hands chunks, then the end or a failure if `ending` is given, to a waiting consumer, or keeps them
    /// for the next one. An ending stops the reading.
    private func hand(_ chunks: [[UInt8]], _ ending: Swift.Result<[UInt8]?, Error>?) {
        typealias HandOver = (CheckedContinuation<[UInt8]?, Error>?, Swift.Result<[UInt8]?, Error>?)
        let (consumer, ready) = state.withLock { state -> HandOver in
            for chunk in chunks {
                state.waiting.append(chunk)
                state.nextOffset = state.nextOffset.map { $0 + Int64(chunk.count) }
            }
            if let ending {
                state.ending = ending
                state.isReading = false
            }
            guard let consumer = state.consumer, let ready = Self.takeReady(&state) else { return (nil, nil) }
            state.consumer = nil
            return (consumer, ready)
        }
        if let consumer, let ready { consumer.resume(with: ready) }
    }
}
