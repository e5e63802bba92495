import Flow
import Synchronization

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
/// A file that can seek (a regular file) is read at offsets, from the position it had when the
/// iteration started, with several reads on the thread pool at once; its position is moved to the end
/// once the end is found. A pipe or a terminal is read one read at a time, at its position.
final class ChunkReader: Sendable {
    private struct Slot {
        let identifier: Int
        /// The offset read, or `nil` for a read at the file's position.
        let offset: Int64?
        var result: Result<[UInt8]>?
    }

    private struct State {
        /// The reads started and not handed out, in the file's order.
        var slots: [Slot] = []
        var nextIdentifier = 0
        /// Where the next read starts, or `nil` for a file read at its position.
        var nextOffset: Int64?
        /// Reads started and not finished, including those whose chunk was dropped.
        var readsInFlight = 0
        /// Whether a read found the end or failed: no read starts after it.
        var isFinished = false
        /// What the consumer gets once the reads in flight are done: the end, or a failure.
        var ending: Swift.Result<[UInt8]?, Error>?
        /// A consumer waiting for the next chunk.
        var consumer: CheckedContinuation<[UInt8]?, Error>?
    }

    private let file: OpenFile
    private let size: Int
    private let state: Synchronization.Mutex<State>

    init(file: OpenFile, size: Int) {
        self.file = file
        self.size = max(size, 1)
        let position = lseek(file.descriptor, 0, SEEK_CUR)
        var initial = State()
        initial.nextOffset = position >= 0 ? Int64(position) : nil
        state = Synchronization.Mutex(initial)
    }

    func next() async throws -> [UInt8]? {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, Error>) in
            let ready = state.withLock { state -> Swift.Result<[UInt8]?, Error>? in
                if let ready = Self.takeReady(&state) { return ready }
                state.consumer = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
            // A chunk was taken, or a consumer waits: either way more reads may start.
            readMore()
        }
    }

    /// The first chunk if it has been read, or the ending once nothing is in flight.
    private static func takeReady(_ state: inout State) -> Swift.Result<[UInt8]?, Error>? {
        if let first = state.slots.first, let result = first.result {
            state.slots.removeFirst()
            return result.map { $0 }
        }
        if state.slots.isEmpty, state.readsInFlight == 0, let ending = state.ending { return ending }
        return nil
    }

    /// Starts reads until ``FileChunks/readAheadLimit`` chunks are being read or waiting (one at a time
    /// for a file read at its position).
    private func readMore() {
        let started = state.withLock { state -> [Slot] in
            var started: [Slot] = []
            while !state.isFinished, state.slots.count < FileChunks.readAheadLimit,
                  state.nextOffset != nil || state.readsInFlight == 0 {
                let slot = Slot(identifier: state.nextIdentifier, offset: state.nextOffset, result: nil)
                state.nextIdentifier += 1
                state.nextOffset = state.nextOffset.map { $0 + Int64(size) }
                state.readsInFlight += 1
                state.slots.append(slot)
                started.append(slot)
            }
            return started
        }
        for slot in started {
            file.read(upTo: size, at: slot.offset).onResult(on: .none) { [self] result in
                finish(slot, with: result)
            }
        }
    }

    private func finish(_ slot: Slot, with result: Result<[UInt8]>) {
        let (consumer, handOut) = state.withLock { state -> (CheckedContinuation<[UInt8]?, Error>?, Swift.Result<[UInt8]?, Error>?) in
            state.readsInFlight -= 1
            if let index = state.slots.firstIndex(where: { $0.identifier == slot.identifier }) {
                let count = (try? result.get())?.count
                if count == nil || count == 0 {
                    // The end, or a failure: the reads after this one are dropped.
                    state.slots.removeSubrange(index...)
                    state.isFinished = true
                    state.ending = result.map { _ in nil }
                    if count == 0, let offset = slot.offset { _ = lseek(file.descriptor, off_t(offset), SEEK_SET) }
                } else {
                    state.slots[index].result = result
                    if let count, count < size, let offset = slot.offset {
                        // A short read before the end: the reads after it started at the wrong place.
                        state.slots.removeSubrange((index + 1)...)
                        state.nextOffset = offset + Int64(count)
                    }
                }
            }
            guard state.consumer != nil, let ready = Self.takeReady(&state) else { return (nil, nil) }
            let consumer = state.consumer
            state.consumer = nil
            return (consumer, ready)
        }
        if let consumer, let handOut { consumer.resume(with: handOut) }
        readMore()
    }
}
