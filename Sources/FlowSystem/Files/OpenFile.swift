import CLibUV
import Flow
import FlowNet
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A file opened with ``FileSystem/open(_:_:permissions:on:)``: read, write, status, flush, close, each a
/// request on libuv's thread pool.
///
/// ```swift
/// FileSystem.open("data.bin").flatMap { file in
///     file.read(upTo: 4096).always { file.close() }
/// }.onValue { header in print("\(header.count) bytes") }
/// ```
///
/// Reads and writes without an offset go on from where the previous one stopped; make one at a time
/// for that order to hold (chain them), or give offsets. Close the file when done; one dropped while
/// open is closed then, on the spot. Once ``close()`` is called, reads, writes, ``status()`` and
/// ``synchronize()`` fail with `EBADF: bad file descriptor` (the descriptor's number may name another
/// file by then). Those made before it complete as they would have: the descriptor is closed once the
/// last of them is done with it. Every method may be called from any thread.
public final class OpenFile: Sendable {
    /// How a file is opened.
    public enum Mode: Sendable, Hashable {
        /// Reading only; the file must exist.
        case read
        /// Writing only; creates the file or empties it.
        case write
        /// Writing at the end; creates the file if needed.
        case append
        /// Reading and writing; creates the file if needed, keeps its content.
        case readWrite
        /// Writing a file that must not exist yet: fails with `EEXIST: file already exists` otherwise.
        case createNew

        var flags: Int32 {
            switch self {
            case .read: O_RDONLY
            case .write: O_WRONLY | O_CREAT | O_TRUNC
            case .append: O_WRONLY | O_CREAT | O_APPEND
            case .readWrite: O_RDWR | O_CREAT
            case .createNew: O_WRONLY | O_CREAT | O_EXCL
            }
        }
    }

    /// The loop the requests report to.
    public let loop: EventLoop
    /// The file descriptor.
    public let descriptor: Int32
    private let descriptorState = Locked(DescriptorState())

    /// Who uses the descriptor, under ``descriptorState``'s lock.
    private struct DescriptorState {
        /// Whether ``OpenFile/close()`` has not been called yet.
        var isOpen = true
        /// How many requests and pool reads are using the descriptor now.
        var uses = 0
        /// The close that ``OpenFile/close()`` put off until the last use ends.
        var closeWhenUnused: (@Sendable () -> Void)?
    }

    init(descriptor: Int32, loop: EventLoop) {
        self.descriptor = descriptor
        self.loop = loop
    }

    deinit {
        // Every use holds the file, so none is running now. A close still put off means a use was
        // dropped without running (its loop had stopped): nobody else will close the descriptor.
        if descriptorState.withLock({ $0.isOpen || $0.closeWhenUnused != nil }) { _ = Glibc.close(descriptor) }
    }

    /// Reads up to `count` bytes, at `offset` or from the current position; an empty array at the
    /// end of the file. One read takes at most 1 GiB. A negative `count` stops the program with a
    /// message.
    ///
    /// ```swift
    /// file.read(upTo: 65536).onValue { chunk in if chunk.isEmpty { print("end") } }
    /// ```
    public func read(upTo count: Int = 64 * 1024, at offset: Int64? = nil) -> Future<[UInt8]> {
        misusePrecondition(count >= 0, "OpenFile.read(upTo:): the count must not be negative, not \(count)")
        // A short read, as the kernel may make anyway, rather than memory for more than one request reads.
        let count = min(count, Self.largestRequest)
        let buffer = ReadTarget(count: count)
        let descriptor = descriptor
        return request(submit: { loop, request, callback in
            var slice = uv_buf_init(buffer.base.assumingMemoryBound(to: CChar.self), UInt32(count))
            return uv_fs_read(loop, request, descriptor, &slice, 1, offset ?? -1, callback)
        }, finish: { request in
            .success(Array(UnsafeRawBufferPointer(start: buffer.base, count: Int(request.pointee.result))))
        })
    }

    /// Writes all of `bytes`, at `offset` or at the current position. Completes once the kernel has
    /// them (see ``synchronize()`` for the disk).
    ///
    /// ```swift
    /// file.write(Array("hello\n".utf8))
    /// ```
    @discardableResult
    public func write(_ bytes: [UInt8], at offset: Int64? = nil) -> Future<Void> {
        writeSome(SharedBytes(bytes), from: 0, at: offset)
    }

    private func writeSome(_ bytes: SharedBytes, from start: Int, at offset: Int64?) -> Future<Void> {
        guard start < bytes.count else { return Future(()) }
        let descriptor = descriptor
        let written: Future<Int> = request(submit: { loop, request, callback in
            bytes.withUnsafeBytes { raw in
                let base = UnsafeMutableRawPointer(mutating: raw.baseAddress!).advanced(by: start)
                var slice = uv_buf_init(
                    base.assumingMemoryBound(to: CChar.self), UInt32(min(bytes.count - start, Self.largestRequest)))
                return uv_fs_write(loop, request, descriptor, &slice, 1, offset ?? -1, callback)
            }
        }, finish: { request in .success(Int(request.pointee.result)) })
        return written.flatMap(on: .none) { [self] count in
            // Short writes happen (a full disk, a signal): write the rest.
            writeSome(bytes, from: start + count, at: offset.map { $0 + Int64(count) })
        }
    }

    /// The file's status (`fstat`).
    ///
    /// ```swift
    /// file.status().onValue { print("\($0.size) bytes") }
    /// ```
    public func status() -> Future<FileStatus> {
        let descriptor = descriptor
        return request(submit: { loop, request, callback in
            uv_fs_fstat(loop, request, descriptor, callback)
        }, finish: { request in .success(FileStatus(request.pointee.statbuf)) })
    }

    /// Flushes what was written to the disk (`fsync`).
    ///
    /// ```swift
    /// file.write(record).flatMap { file.synchronize() }.onValue { print("durable") }
    /// ```
    @discardableResult
    public func synchronize() -> Future<Void> {
        let descriptor = descriptor
        return request(submit: { loop, request, callback in
            uv_fs_fsync(loop, request, descriptor, callback)
        }, finish: { _ in .success(()) })
    }

    /// Closes the file. Closing twice is harmless. Cancelling the returned future stops the waiting,
    /// not the closing.
    ///
    /// Reads and writes made before still complete: the descriptor is closed once the last of them is
    /// done with it, and the future completes then. Those made after fail with `EBADF`.
    ///
    /// ```swift
    /// file.close().onValue { print("closed") }
    /// ```
    @discardableResult
    public func close() -> Future<Void> {
        let descriptor = descriptor
        let loop = loop
        // Not cancellable: a close taken back from the pool's queue would leave the descriptor open
        // for good, since the file counts as closed from now on.
        let closeNow: @Sendable () -> Future<Void> = {
            FileSystemRequest.perform(on: loop, isCancellable: false, submit: { loop, request, callback in
                uv_fs_close(loop, request, descriptor, callback)
            }, finish: { _ in .success(()) })
        }
        let closing = PendingResult<Void>()
        let isUsed = descriptorState.withLock { state -> Bool? in
            guard state.isOpen else { return nil }
            state.isOpen = false
            guard state.uses > 0 else { return false }
            state.closeWhenUnused = { closeNow().onResult(on: .none) { closing.complete($0) } }
            return true
        }
        switch isUsed {
        case nil: return Future(())
        case false?: return closeNow()
        case true?: return closing.future()
        }
    }

    /// Reads from the current position to the end of the file, failing with `EFBIG: file too large`
    /// past `limit` bytes (`Int.max`: no limit; a negative one stops the program with a message), and
    /// leaves the position at the end.
    ///
    /// The bytes land once, in the array handed out. From 8 MiB on, two pool threads read the two
    /// halves the file's status announces at the same time (at offsets), sharing the copying and the
    /// making present of the fresh memory (one call per half rather than a page fault per 4 KiB page);
    /// a last read finds the end (or what the file grew by since).
    ///
    /// ```swift
    /// file.readToEnd().onValue { bytes in print("\(bytes.count) bytes") }
    /// ```
    public func readToEnd(limit: Int = 1 << 30) -> Future<[UInt8]> {
        misusePrecondition(limit >= 0, "OpenFile.readToEnd: the limit must not be negative, not \(limit)")
        return status().flatMap(on: .none) { [self] status in
            // Room for the whole file and a byte more: the read that finds the end then needs no new
            // memory, and a file of the status's size is read in one request.
            let size = min(Int(max(status.size, 0)), limit)
            let collected = ReadCollector(capacity: size + 1)
            guard let position = whileOpen({ lseek(descriptor, 0, SEEK_CUR) }) else {
                return Future(error: EventLoop.error(UV_EBADF.rawValue))
            }
            let expected = position >= 0 ? size - min(Int(position), size) : 0
            guard expected >= Self.splitReadMinimum else { return readRest(into: collected, limit: limit) }
            return readInParts(into: collected, from: Int64(position), count: expected)
                .flatMap(on: .none) { [self] read -> Future<[UInt8]> in
                    collected.count = read
                    _ = whileOpen { lseek(descriptor, off_t(Int64(position) + Int64(read)), SEEK_SET) }
                    // Finds the end, or what the file grew by since its status was read.
                    return readRest(into: collected, limit: limit)
                }
        }
    }

    /// Marks the descriptor in use until ``endUse()``, so that a ``close()`` meanwhile waits for it;
    /// false once ``close()`` was called (the descriptor's number may name another file by then).
    func beginUse() -> Bool {
        descriptorState.withLock { state in
            guard state.isOpen else { return false }
            state.uses += 1
            return true
        }
    }

    /// Ends a use ``beginUse()`` began; the last one starts a close put off until then.
    func endUse() {
        let closeNow = descriptorState.withLock { state -> (@Sendable () -> Void)? in
            state.uses -= 1
            guard state.uses == 0, let close = state.closeWhenUnused else { return nil }
            state.closeWhenUnused = nil
            return close
        }
        closeNow?()
    }

    /// Runs `body` (which uses the descriptor) with the descriptor in use; `nil`, without running it,
    /// once ``close()`` was called.
    func whileOpen<Value>(_ body: () throws -> Value) rethrows -> Value? {
        guard beginUse() else { return nil }
        defer { endUse() }
        return try body()
    }

    /// A request on the descriptor, in use until libuv is done with it; fails with `EBADF` once
    /// ``close()`` was called.
    private func request<Value: Sendable>(
        submit: @escaping (UnsafeMutablePointer<uv_loop_t>, UnsafeMutablePointer<uv_fs_t>, uv_fs_cb) -> Int32,
        finish: @escaping (UnsafeMutablePointer<uv_fs_t>) -> Result<Value>
    ) -> Future<Value> {
        guard beginUse() else { return Future(error: EventLoop.error(UV_EBADF.rawValue)) }
        return FileSystemRequest.perform(on: loop, whenDone: { [self] in endUse() }, submit: submit, finish: finish)
    }

    /// The most bytes one read or write request moves (1 GiB).
    static let largestRequest = 1 << 30

    /// The smallest read ``readToEnd(limit:)`` splits in two parts read at the same time.
    static let splitReadMinimum = 8 << 20

    /// Reads `count` bytes at `offset` into the start of `collected`'s memory, in two halves read at
    /// the same time by two pool jobs (each with `pread`, until its half is full or the file ends):
    /// two threads share the copying and the work of making fresh memory present, which each does for
    /// its half in one call before reading (see ``ReadCollector/populate(_:_:)``). The future gives
    /// how many bytes were read in one piece from the start: fewer than `count` if the file ended sooner.
    func readInParts(into collected: ReadCollector, from offset: Int64, count: Int) -> Future<Int> {
        let descriptor = descriptor
        let firstCount = count / 2
        @Sendable func fill(_ start: Int, _ length: Int) throws -> Int {
            collected.populate(start, length)
            var done = 0
            while done < length {
                let read = pread(descriptor, collected.base.advanced(by: start + done), length - done,
                                 off_t(offset + Int64(start + done)))
                if read < 0 {
                    if errno == EINTR { continue }
                    throw EventLoop.error(-errno)
                }
                if read == 0 { break }
                done += read
            }
            return done
        }
        @Sendable func fillWhileOpen(_ start: Int, _ length: Int) throws -> Int {
            guard let read = try whileOpen({ try fill(start, length) }) else {
                throw EventLoop.error(UV_EBADF.rawValue)
            }
            return read
        }
        let second = ThreadPool.run(on: loop) { try fillWhileOpen(firstCount, count - firstCount) }
        let first = ThreadPool.run(on: loop) { try fillWhileOpen(0, firstCount) }
        return first.flatMap(on: .none) { firstRead in
            second.map(on: .none) { secondRead in
                // A first half cut short means the file ended there: the second has nothing after it.
                firstRead < firstCount ? firstRead : firstCount + secondRead
            }
        }
    }

    /// Reads into `collected` where it ends, until a read finds the end of the file. Every read lands
    /// in the collector's memory, so the bytes are copied once, into the array handed out.
    private func readRest(into collected: ReadCollector, limit: Int) -> Future<[UInt8]> {
        if collected.count == collected.capacity {
            // The file grew since its status was read (or has no size there, as `/proc`'s files).
            collected.grow(upTo: limit == .max ? limit : limit + 1)
        }
        let descriptor = descriptor
        let room = min(collected.capacity - collected.count, 1 << 30)
        let read: Future<Int> = request(submit: { loop, request, callback in
            var slice = uv_buf_init(
                collected.base.advanced(by: collected.count).assumingMemoryBound(to: CChar.self), UInt32(room))
            return uv_fs_read(loop, request, descriptor, &slice, 1, -1, callback)
        }, finish: { request in .success(Int(request.pointee.result)) })
        return read.flatMap(on: .none) { [self] count -> Future<[UInt8]> in
            if count == 0 { return Future(collected.takeBytes()) }
            collected.count += count
            guard collected.count <= limit else { return Future(error: EventLoop.error(UV_EFBIG.rawValue)) }
            return readRest(into: collected, limit: limit)
        }
    }

    /// The file from the current position as an `AsyncSequence` of chunks of up to `size` bytes, in
    /// order. Reads run ahead of the consumer, at most ``FileChunks/readAheadLimit`` (16) chunks being
    /// read or waiting to be taken: a slow consumer holds that many chunks at most (back-pressure),
    /// whatever the file's size, and one that keeps up rarely waits for a read. Each read fills four
    /// chunks in one call (`preadv`); a regular file has two reads of consecutive ranges running at the
    /// same time on two pool threads, handed over in the file's order straight to the consumer, without a
    /// hop through the loop (a pipe, read at its position, one read at a time). A regular file is read
    /// at offsets, and its position is at the end once the sequence ends. Dropping the iterator (leaving
    /// the loop early) stops the reads after the ones running; a cancelled task's `next()` throws
    /// `CancellationError` and stops them too. Close the file once the sequence has ended or was left.
    ///
    /// ```swift
    /// for try await chunk in file.chunks(size: 65536) {
    ///     try await connection.write(chunk).get()
    /// }
    /// ```
    public func chunks(size: Int = 64 * 1024) -> FileChunks {
        misusePrecondition(size > 0, "OpenFile.chunks(size:): the chunk size must be positive, not \(size)")
        return FileChunks(file: self, size: size)
    }

    /// Whether ``close()`` has not been called yet.
    var isStillOpen: Bool { descriptorState.withLock { $0.isOpen } }
}

/// Memory a read fills on a pool thread, kept alive by the request until its callback.
final class ReadTarget: @unchecked Sendable {
    // @unchecked Sendable: written by one pool thread during the read, read on the loop after it.
    let base: UnsafeMutableRawPointer

    init(count: Int) {
        base = .allocate(byteCount: max(count, 1), alignment: 16)
    }

    deinit {
        base.deallocate()
    }
}

/// The memory ``OpenFile/readToEnd(limit:)`` reads into, one read after the other: the storage of the
/// array it hands out, so the bytes are not copied again (a 1 GiB file would be copied once more, and
/// its memory touched twice).
final class ReadCollector: @unchecked Sendable {
    // @unchecked Sendable: used by one read at a time; each read is submitted from the loop, fills the
    // memory on a pool thread, and completes on the loop, before the next one starts. The two halves of
    // a split read (`readInParts`) fill disjoint ranges of the memory, and both finish before the next
    // read starts or `count` changes.
    private var storage: [UInt8]
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    /// The bytes read so far.
    var count = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
        (storage, base) = Self.makeStorage(self.capacity)
    }

    /// An array of `capacity` bytes for the reads to fill, and its memory. The array never changes
    /// while reads fill it (so its memory stays where it is), and ``takeBytes()`` cuts off what they
    /// did not fill before anyone reads it.
    private static func makeStorage(_ capacity: Int) -> ([UInt8], UnsafeMutableRawPointer) {
        var base: UnsafeMutableRawPointer?
        let storage = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initializedCount in
            base = UnsafeMutableRawPointer(buffer.baseAddress!)
            initializedCount = capacity
        }
        return (storage, base!)
    }

    /// Makes the pages of `count` bytes from `start` present and writable in one call
    /// (`madvise(MADV_POPULATE_WRITE)`, Linux 5.14 and later), instead of one page fault per 4 KiB page
    /// as a read fills them. Only the whole pages inside the range; where the call is not known, nothing.
    func populate(_ start: Int, _ count: Int) {
        let pageSize = Self.pageSize
        let first = (Int(bitPattern: base) + start + pageSize - 1) & ~(pageSize - 1)
        let end = (Int(bitPattern: base) + start + count) & ~(pageSize - 1)
        guard end > first else { return }
        _ = madvise(UnsafeMutableRawPointer(bitPattern: first), end - first, Self.populateWrite)
    }

    /// The system's page size (4 KiB on x86-64, up to 64 KiB on some ARM systems): `madvise` takes
    /// only a range that starts on a page.
    private static let pageSize = max(Int(sysconf(Int32(_SC_PAGESIZE))), 4096)

    /// `MADV_POPULATE_WRITE`, which Glibc's module may not name.
    private static let populateWrite: Int32 = 23

    /// Doubles the memory (at least 64 KiB more), up to `limit` bytes.
    func grow(upTo limit: Int) {
        let grown = max(min(max(capacity * 2, capacity + 64 * 1024), limit), capacity)
        guard grown > capacity else { return }
        let (larger, largerBase) = Self.makeStorage(grown)
        largerBase.copyMemory(from: base, byteCount: count)
        (storage, base, capacity) = (larger, largerBase, grown)
    }

    /// The bytes read, as an array; the collector is done.
    func takeBytes() -> [UInt8] {
        var bytes = storage
        storage = []
        // Less than half used (a file that shrank, or grew past its status): an exact copy frees the rest.
        if count < capacity / 2 { return Array(bytes[0..<count]) }
        bytes.removeSubrange(count...)   // in place: the array is no longer shared
        return bytes
    }
}
