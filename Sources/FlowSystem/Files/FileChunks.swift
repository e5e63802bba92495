import Flow
import Synchronization

/// The chunks of an ``OpenFile``; see ``OpenFile/chunks(size:)``.
public struct FileChunks: AsyncSequence, Sendable {
    /// A chunk of bytes, never empty.
    public typealias Element = [UInt8]

    /// How many chunks the reads run ahead of the consumer, at most.
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

/// Reads a file's chunks one after the other, ahead of the consumer, up to
/// ``FileChunks/readAheadLimit`` chunks waiting.
final class ChunkReader: Sendable {
    private struct State {
        /// Read and not taken yet: chunks, then possibly the end (an empty chunk) or a failure.
        var waiting: [Result<[UInt8]>] = []
        var isReading = false
        /// Whether a read found the end or failed: no read follows.
        var isFinished = false
        /// A consumer waiting for the next chunk.
        var consumer: CheckedContinuation<[UInt8]?, Error>?
    }

    private let file: OpenFile
    private let size: Int
    private let state = Mutex(State())

    init(file: OpenFile, size: Int) {
        self.file = file
        self.size = size
    }

    func next() async throws -> [UInt8]? {
        let taken = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[UInt8]?, Error>) in
            let ready = state.withLock { state -> Result<[UInt8]>?? in
                if !state.waiting.isEmpty { return .some(state.waiting.removeFirst()) }
                if state.isFinished { return .some(nil) }
                state.consumer = continuation
                return .none
            }
            switch ready {
            case .some(.some(let result)): continuation.resume(with: result.map { $0.isEmpty ? nil : $0 })
            case .some(.none): continuation.resume(returning: nil)
            case .none: break
            }
            // A chunk was taken, or a consumer waits: either way the next read may start.
            readMore()
        }
        return taken
    }

    /// Starts the next read unless one runs, enough chunks wait, or the file has ended.
    private func readMore() {
        let starts = state.withLock { state -> Bool in
            guard !state.isReading, !state.isFinished, state.waiting.count < FileChunks.readAheadLimit else {
                return false
            }
            state.isReading = true
            return true
        }
        guard starts else { return }
        file.read(upTo: size).onResult(on: .none) { [self] result in
            let consumer = state.withLock { state -> CheckedContinuation<[UInt8]?, Error>? in
                state.isReading = false
                let isChunk = (try? result.get())?.isEmpty == false
                if !isChunk { state.isFinished = true }
                if let consumer = state.consumer {
                    state.consumer = nil
                    return consumer
                }
                state.waiting.append(result)
                return nil
            }
            // The consumer resumes outside the lock; the next read starts meanwhile.
            consumer?.resume(with: result.map { $0.isEmpty ? nil : $0 })
            readMore()
        }
    }
}
