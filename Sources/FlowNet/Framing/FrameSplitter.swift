import Flow

/// Cuts a connection's chunks into frames: the part that ``StreamLines`` and ``StreamFrames`` (and
/// their signals) do not share. Package-visible for the frame reader's fuzzer (Fuzz/FrameReaderFuzzer).
package protocol FrameSplitter: Sendable {
    associatedtype Frame: Sendable
    /// Adds a chunk as it arrived.
    mutating func append(_ chunk: [UInt8])
    /// The next complete frame, `nil` if more bytes are needed; throws if the bytes break the framing.
    mutating func next() throws -> Frame?
    /// What the bytes left at the end of the stream make: a last frame, nothing, or an error.
    mutating func finish() throws -> Frame?
    /// The bytes appended and not yet cut into frames, taken out: they go back to the connection for
    /// whoever reads next.
    mutating func takeUnread() -> PendingBytes
    /// Starts from `bytes`, the unread bytes a reader gave back, while holding nothing itself.
    mutating func adopt(_ bytes: PendingBytes)
    /// How many bytes the splitter holds, not yet cut into frames.
    var unreadCount: Int { get }
}

/// The bytes received and not yet handed out, as an array and the index of the first unread byte, so
/// that handing out a frame moves nothing.
package struct PendingBytes: Sendable {
    private(set) var bytes: [UInt8] = []
    private(set) var start = 0

    package init() {}

    package var count: Int { bytes.count - start }

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

    /// The bytes not handed out, as an array of their own.
    package var unreadBytes: [UInt8] { start == 0 ? bytes : Array(bytes[start...]) }

    /// Everything not handed out, taken out of `self`, which is left empty.
    mutating func takeAll() -> PendingBytes {
        defer { self = PendingBytes() }
        return self
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

    /// The next frame `splitter` cuts from the connection's bytes, for an `AsyncSequence` step, or
    /// `nil` at the end of the stream, once the splitter has no frame at hand: the bytes are read and
    /// cut on the loop. Bytes another reader gave back come first. Nothing is read ahead of the
    /// consumer, and the bytes the splitter holds after the frame stay claimable by the connection
    /// for whoever reads next (see `claimHeldBytes(except:)`).
    ///
    /// With an `idleTimeout`, each read of a chunk that waits more than that many seconds fails the step
    /// with ``StreamTimeoutError/idle(seconds:)``, and the bytes the splitter holds stay claimable too.
    ///
    /// The step waits on `isolation` (the consumer's actor), so that a `@MainActor` loop does not change
    /// executors for each frame; a main-actor consumer's wait holds the main loop, whose work resumes it.
    func nextFrame<Core: FrameSplitter>(
        cutBy splitter: SharedSplitter<Core>, idleTimeout: Double? = nil, isolation: isolated (any Actor)?
    ) async throws -> Core.Frame? {
        let isMainActorWait = EventLoop.beginMainActorWait(isolation)
        defer { EventLoop.endMainActorWait(isMainActorWait) }
        return try await withCheckedThrowingContinuation(isolation: isolation) { continuation in
            onLoop { [self] in
                loopNextFrame(splitter, idleTimeout: idleTimeout) { continuation.resume(with: $0) }
            }
        }
    }

    /// `nextFrame(cutBy:)` in the loop's context: first from the bytes given back or held by another
    /// reader, then from chunk after chunk until a frame is complete.
    private func loopNextFrame<Core: FrameSplitter>(
        _ splitter: SharedSplitter<Core>, idleTimeout: Double?,
        _ done: @escaping @Sendable (Swift.Result<Core.Frame?, Error>) -> Void
    ) {
        claimHeldBytes(except: splitter)
        if case .futures(let reads) = readMode, reads.unread.count > 0 {
            splitter.append(reads.unread.takeAll())
            do {
                if let frame = try splitter.next() {
                    holdBytes(of: splitter)
                    done(.success(frame))
                    return
                }
            } catch {
                done(.failure(error))
                return
            }
        }
        readChunk(into: splitter, idleTimeout: idleTimeout, done)
    }

    private func readChunk<Core: FrameSplitter>(
        into splitter: SharedSplitter<Core>, idleTimeout: Double?,
        _ done: @escaping @Sendable (Swift.Result<Core.Frame?, Error>) -> Void
    ) {
        let chunk = idleTimeout.map { read(timeout: $0, claimingHeldBytesExcept: splitter) }
            ?? read(claimingHeldBytesExcept: splitter)
        // Completed in the loop's context.
        chunk.onResult(on: .none) { [self] result in
            do {
                switch result {
                case .success(let chunk?):
                    splitter.append(chunk)
                    guard let frame = try splitter.next() else {
                        readChunk(into: splitter, idleTimeout: idleTimeout, done)
                        return
                    }
                    holdBytes(of: splitter)
                    done(.success(frame))
                case .success(nil):
                    done(.success(try splitter.finish()))
                case .failure(let error):
                    // The connection may stay open (after an idle timeout, say): a reader that takes
                    // over gets the bytes of the frame this one had begun.
                    holdBytes(of: splitter)
                    done(.failure(error))
                }
            } catch {
                done(.failure(error))
            }
        }
    }

    /// Records that `splitter` holds bytes of this connection not yet handed out, so that another
    /// reader claims them before reading the socket. Loop context only.
    private func holdBytes<Core: FrameSplitter>(of splitter: SharedSplitter<Core>) {
        guard case .futures(let reads) = readMode else { return }
        reads.holder = splitter
    }

    /// Takes the bytes a framed sequence took from the socket and did not hand out (unless it is
    /// `reader`, which is reading on) back into the connection, ahead of what was given back: a
    /// reader that takes over after a sequence misses nothing. Loop context only.
    func claimHeldBytes(except reader: HeldBytes? = nil) {
        guard case .futures(let reads) = readMode, let holder = reads.holder, holder !== reader else { return }
        reads.holder = nil
        var held = holder.takeUnread()
        guard held.count > 0 else { return }
        if reads.unread.count > 0 { held.append(reads.unread.unreadBytes) }
        reads.unread = held
    }

    /// Hands bytes a framed signal's listener took from the socket but did not deliver back to the
    /// connection: the next ``read()`` (or framed reader) gets them first. Loop context only.
    func giveBack(_ bytes: PendingBytes) {
        guard bytes.count > 0, case .futures(let reads) = readMode else { return }
        if reads.unread.count == 0 {
            reads.unread = bytes
        } else {
            // Given back by a listener that stopped while its last chunk was on its way: it follows
            // the bytes given back before.
            reads.unread.append(bytes.unreadBytes)
        }
    }

    /// A finite signal of the frames `splitter` cuts from the connection's bytes: each listener reads
    /// with ``read()`` (one chunk at a time, the next once the frames of this one were delivered), and
    /// stops reading once it stops listening, giving the bytes it read and did not deliver back to the
    /// connection.
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

/// What holds bytes of a connection that it read and did not hand out: a framed sequence's splitter.
protocol HeldBytes: AnyObject, Sendable {
    /// The bytes, taken out.
    func takeUnread() -> PendingBytes
}

/// The splitter of one framed `AsyncSequence`, shared by its steps (on whatever thread the consumer's
/// task runs) and by its connection's loop, which claims the bytes not yet cut when another reader
/// takes over.
final class SharedSplitter<Core: FrameSplitter>: HeldBytes, @unchecked Sendable {
    // @unchecked Sendable: `core` is guarded by `mutex`, which no call holds while running other code.
    private let mutex = Flow.Mutex()
    private var core: Core

    init(_ core: Core) { self.core = core }

    func append(_ bytes: PendingBytes) {
        mutex.protect {
            if core.unreadCount == 0 {
                core.adopt(bytes)
            } else {
                core.append(bytes.unreadBytes)
            }
        }
    }

    func append(_ chunk: [UInt8]) { mutex.protect { core.append(chunk) } }
    func next() throws -> Core.Frame? { try mutex.protect { try core.next() } }
    func finish() throws -> Core.Frame? { try mutex.protect { try core.finish() } }
    func takeUnread() -> PendingBytes { mutex.protect { core.takeUnread() } }
}

/// One listener's reading of a framed signal.
final class SignalFrameReader<Splitter: FrameSplitter>: @unchecked Sendable {
    // @unchecked Sendable: `splitter`, `pendingRead`, `isStopped` and `isDelivering` are guarded by
    // `mutex`; the callback is called with the mutex released, so that a listener may stop listening
    // from it.
    private let mutex = Flow.Mutex()
    private var splitter: Splitter
    private var pendingRead: Future<[UInt8]?>?
    private var isStopped = false
    /// Whether `didRead` is handing out frames: it gives the unread bytes back if the listener stops.
    private var isDelivering = false
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
        let (read, unread): (Future<[UInt8]?>?, PendingBytes?) = mutex.protect {
            guard !isStopped else { return (nil, nil) }
            isStopped = true
            defer { pendingRead = nil }
            return (pendingRead, isDelivering ? nil : splitter.takeUnread())
        }
        read?.cancel()
        if let unread, unread.count > 0 {
            let connection = connection
            connection.loop.inContext { connection.giveBack(unread) }
        }
    }

    /// In the loop's context, where the read completes: cuts the chunk into frames and hands them out
    /// one at a time, so that a listener that stops after one leaves the rest to the next reader.
    private func didRead(_ result: Swift.Result<[UInt8]?, Error>) {
        let proceed: Bool = mutex.protect {
            pendingRead = nil
            if case .success(let chunk?) = result { splitter.append(chunk) }
            guard !isStopped else { return false }
            isDelivering = true
            return true
        }
        guard proceed else {
            // Stopped while the chunk was on its way: it goes back, after what `stop()` gave back.
            giveBackUnread()
            return
        }
        while true {
            let step: (frame: Splitter.Frame?, end: Event<Splitter.Frame>?) = mutex.protect {
                do {
                    if let frame = try splitter.next() { return (frame, nil) }
                    switch result {
                    case .success(.some): return (nil, nil)
                    case .success(nil): return (try splitter.finish(), .end(nil))
                    case .failure(let error): return (nil, .end(error))
                    }
                } catch {
                    return (nil, .end(error))
                }
            }
            if let frame = step.frame {
                callback(.value(frame))
                if mutex.protect({ isStopped }) {
                    giveBackUnread()
                    return
                }
                if step.end == nil { continue }
            }
            mutex.protect { isDelivering = false }
            if let end = step.end {
                if mutex.protect({ isStopped }) { return }
                callback(end)
            } else if !mutex.protect({ isStopped }) {
                readNext()
            } else {
                giveBackUnread()
            }
            return
        }
    }

    private func giveBackUnread() {
        let unread = mutex.protect { () -> PendingBytes in
            isDelivering = false
            return splitter.takeUnread()
        }
        connection.giveBack(unread)
    }
}
