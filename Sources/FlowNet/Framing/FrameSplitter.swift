import Flow

/// Cuts a connection's chunks into frames: the part that ``StreamLines`` and ``StreamFrames`` (and
/// their signals) do not share.
protocol FrameSplitter: Sendable {
    associatedtype Frame: Sendable
    /// Adds a chunk as it arrived.
    mutating func append(_ chunk: [UInt8])
    /// The next complete frame, `nil` if more bytes are needed; throws if the bytes break the framing.
    mutating func next() throws -> Frame?
    /// What the bytes left at the end of the stream make: a last frame, nothing, or an error.
    mutating func finish() throws -> Frame?
}

/// The bytes received and not yet handed out, as an array and the index of the first unread byte, so
/// that handing out a frame moves nothing.
struct PendingBytes: Sendable {
    private(set) var bytes: [UInt8] = []
    private(set) var start = 0

    var count: Int { bytes.count - start }

    mutating func append(_ chunk: [UInt8]) {
        if start == bytes.count {
            // Everything was handed out: the chunk becomes the buffer, without a copy.
            bytes = chunk
            start = 0
        } else {
            if start > 0 {
                bytes.removeSubrange(0..<start)
                start = 0
            }
            bytes += chunk
        }
    }

    /// Hands out `count` bytes from the start.
    mutating func consume(_ count: Int) {
        start += count
    }

    subscript(offset: Int) -> UInt8 { bytes[start + offset] }
}

extension StreamConnection {
    /// Reads the next chunk for an `AsyncSequence` step, waiting on `isolation` (the consumer's actor),
    /// so that a `@MainActor` loop does not change executors for each chunk. A main-actor consumer's wait
    /// holds the main loop, whose work resumes it: ``EventLoop/run()`` does not return before it ran.
    func nextChunk(isolation: isolated (any Actor)?) async throws -> [UInt8]? {
        let isMainActorWait = EventLoop.beginMainActorWait(isolation)
        defer { EventLoop.endMainActorWait(isMainActorWait) }
        return try await withCheckedThrowingContinuation(isolation: isolation) { continuation in
            read().onResult(on: .none) { result in
                continuation.resume(with: result)
            }
        }
    }

    /// A finite signal of the frames `splitter` cuts from the connection's bytes: each listener reads
    /// with ``read()`` (one chunk at a time, the next once the frames of this one were delivered), and
    /// stops reading once it stops listening.
    func framedSignal<Splitter: FrameSplitter>(
        _ makeSplitter: @escaping @Sendable () -> Splitter
    ) -> FiniteSignal<Splitter.Frame> {
        let connection = self
        return FiniteSignal(onEvent: { callback in
            let reader = SignalFrameReader(connection: connection, splitter: makeSplitter(), callback: callback)
            reader.readNext()
            return Disposer { reader.stop() }
        })
    }
}

/// One listener's reading of a framed signal.
final class SignalFrameReader<Splitter: FrameSplitter>: @unchecked Sendable {
    // @unchecked Sendable: `splitter`, `pendingRead` and `isStopped` are guarded by `mutex`; the
    // callback is called with the mutex released, so that a listener may stop listening from it.
    private let mutex = Flow.Mutex()
    private var splitter: Splitter
    private var pendingRead: Future<[UInt8]?>?
    private var isStopped = false
    private let connection: StreamConnection
    private let callback: @Sendable (Event<Splitter.Frame>) -> Void

    init(
        connection: StreamConnection, splitter: Splitter,
        callback: @escaping @Sendable (Event<Splitter.Frame>) -> Void
    ) {
        self.connection = connection
        self.splitter = splitter
        self.callback = callback
    }

    func readNext() {
        let read = connection.read()
        let chained = read.onResult(on: .none) { [self] result in
            didRead(result)
        }
        mutex.protect {
            if isStopped {
                chained.cancel()
            } else {
                pendingRead = chained
            }
        }
    }

    func stop() {
        let read: Future<[UInt8]?>? = mutex.protect {
            isStopped = true
            defer { pendingRead = nil }
            return pendingRead
        }
        read?.cancel()
    }

    private func didRead(_ result: Swift.Result<[UInt8]?, Error>) {
        var frames: [Splitter.Frame] = []
        var end: Event<Splitter.Frame>?
        let stopped: Bool = mutex.protect {
            pendingRead = nil
            guard !isStopped else { return true }
            do {
                switch result {
                case .success(let chunk?):
                    splitter.append(chunk)
                    while let frame = try splitter.next() { frames.append(frame) }
                case .success(nil):
                    while let frame = try splitter.next() { frames.append(frame) }
                    if let last = try splitter.finish() { frames.append(last) }
                    end = .end(nil)
                case .failure(let error):
                    end = .end(error)
                }
            } catch {
                end = .end(error)
            }
            return false
        }
        guard !stopped else { return }
        for frame in frames {
            if mutex.protect({ isStopped }) { return }
            callback(.value(frame))
        }
        if let end {
            if mutex.protect({ isStopped }) { return }
            callback(end)
        } else if !mutex.protect({ isStopped }) {
            readNext()
        }
    }
}
