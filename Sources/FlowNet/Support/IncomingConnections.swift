import Flow

/// A listener whose accepted connections come as an `AsyncSequence`, for servers written as
/// structured tasks: a task group serves ``connections``, and ``closeGracefully(deadline:)`` ends the
/// sequence, lets the open connections finish until a deadline, then closes those left.
///
/// ```swift
/// let server = try await TCPListener.listenForConnections(port: 7000)
/// try await withThrowingDiscardingTaskGroup { group in
///     for await connection in server.connections {
///         group.addTask {
///             defer { connection.close() }
///             for try await line in connection.lines(maximumLength: 1024, idleTimeout: 60) {
///                 try await connection.writeAsync("you said: \(line)\r\n")
///             }
///         }
///     }
/// }
/// // Elsewhere, on SIGTERM: server.closeGracefully(deadline: 5)
/// ```
///
/// A connection accepted and not yet taken from the sequence when it ends is closed: nothing would
/// serve it. A task cancelled while it waits for a connection gets `nil`, so a cancelled task group
/// ends its loop.
public final class ConnectionListener<Connection: StreamConnection & Sendable>: Sendable {
    /// The connections accepted from now on, in order; the sequence ends once ``close()`` or
    /// ``closeGracefully(deadline:)`` is called.
    public let connections: IncomingConnections<Connection>
    /// How many accepted connections are open, as a signal; readable from any thread.
    public let openConnections: ReadSignal<Int>
    /// The address a TCP listener listens on (its port chosen by the system for port 0); `nil` for a
    /// pipe listener, whose path is the one it was given.
    public let localAddress: SocketAddress?
    private let queue: IncomingConnectionQueue<Connection>
    private let closeListener: @Sendable () -> Future<Void>
    private let closeListenerGracefully: @Sendable (Double) -> Future<Int>

    init(
        queue: IncomingConnectionQueue<Connection>, openConnections: ReadSignal<Int>, localAddress: SocketAddress?,
        close: @escaping @Sendable () -> Future<Void>, closeGracefully: @escaping @Sendable (Double) -> Future<Int>
    ) {
        self.queue = queue
        connections = IncomingConnections(queue: queue)
        self.openConnections = openConnections
        self.localAddress = localAddress
        closeListener = close
        closeListenerGracefully = closeGracefully
    }

    /// Ends ``connections``, stops listening, and closes the connections not yet taken from the
    /// sequence; connections already handed out stay open (their tasks close them). Callable from any
    /// thread.
    @discardableResult
    public func close() -> Future<Void> {
        queue.finish()
        return closeListener()
    }

    /// Ends ``connections`` and stops listening, lets the connections handed out finish for up to
    /// `deadline` seconds, then closes those still open, which ends their reads. The future completes
    /// once the listener and every connection are closed, with how many the deadline closed. Callable
    /// from any thread.
    ///
    /// - Parameter deadline: seconds from now to wait for the connections, 0 or more; `.infinity` waits
    ///   for every connection to close. NaN or a negative deadline stops the program with a message.
    @discardableResult
    public func closeGracefully(deadline: Double) -> Future<Int> {
        queue.finish()
        return closeListenerGracefully(deadline)
    }
}

/// The connections a ``ConnectionListener`` accepts, as an `AsyncSequence` that ends when the
/// listener is closed. Iterate it once: several iterators share its connections between them.
public struct IncomingConnections<Connection: StreamConnection & Sendable>: AsyncSequence, Sendable {
    /// An accepted connection, open; the code that takes it closes it.
    public typealias Element = Connection

    let queue: IncomingConnectionQueue<Connection>

    /// Makes the iterator.
    public func makeAsyncIterator() -> Iterator { Iterator(queue: queue) }

    /// Waits for connection after connection.
    public struct Iterator: AsyncIteratorProtocol {
        let queue: IncomingConnectionQueue<Connection>

        /// The next accepted connection, or `nil` once the listener is closed or the task is cancelled.
        public mutating func next() async -> Connection? {
            await queue.next(isolation: nil)
        }

        /// The next accepted connection, waited for on the caller's actor (a `for await` loop's own),
        /// so that a `@MainActor` loop takes it without changing executors. A main-actor caller's wait
        /// holds the main loop: `EventLoop.run()` does not return before the caller has the
        /// connection or `nil`.
        public mutating func next(isolation actor: isolated (any Actor)?) async -> Connection? {
            await queue.next(isolation: actor)
        }
    }
}

/// The accepted connections between the listener's accept handler (on its loop) and the tasks that
/// take them (anywhere).
final class IncomingConnectionQueue<Connection: StreamConnection & Sendable>: Sendable {
    private struct State {
        var buffered: [Connection] = []
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Connection?, Never>)] = []
        var nextWaiterID: UInt64 = 0
        var isFinished = false
    }

    private let state = Locked(State())

    /// Hands `connection` to a waiting task, or keeps it for the next; closes it once finished.
    func offer(_ connection: Connection) {
        let waiter = state.withLock { state -> CheckedContinuation<Connection?, Never>?? in
            if state.isFinished { return .none }
            if state.waiters.isEmpty {
                state.buffered.append(connection)
                return .some(nil)
            }
            return .some(state.waiters.removeFirst().continuation)
        }
        switch waiter {
        case .none: connection.close()
        case .some(nil): break
        case .some(let continuation?): continuation.resume(returning: connection)
        }
    }

    /// Ends the sequence: waiting tasks get `nil`, and the connections no task took are closed.
    func finish() {
        let (waiters, unserved) = state.withLock { state in
            state.isFinished = true
            defer {
                state.waiters = []
                state.buffered = []
            }
            return (state.waiters, state.buffered)
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
        for connection in unserved { connection.close() }
    }

    /// The next connection, waited for on `isolation`, the consumer's actor; a main-actor consumer's
    /// wait holds the main loop until it has run again.
    func next(isolation: isolated (any Actor)?) async -> Connection? {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        let isMainActorWait = EventLoop.beginMainActorWait(isolation)
        defer { EventLoop.endMainActorWait(isMainActorWait) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation(isolation: isolation) { continuation in
                let ready = state.withLock { state -> Connection?? in
                    if !state.buffered.isEmpty { return .some(state.buffered.removeFirst()) }
                    if state.isFinished || Task.isCancelled { return .some(nil) }
                    state.waiters.append((id, continuation))
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Connection?, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(returning: nil)
        }
    }
}

extension TCPListener {
    /// Listens on `host` and `port` like ``listenAsync(host:port:backlog:reusePort:on:file:line:onAccept:)-(_,_,_,_,EventLoop,_,_,_)``,
    /// and hands out the accepted connections as an `AsyncSequence` rather than to a handler: for a
    /// server written as structured tasks (see ``ConnectionListener``).
    ///
    /// ```swift
    /// let server = try await TCPListener.listenForConnections(port: 0)
    /// for await connection in server.connections { connection.close() }
    /// ```
    public nonisolated(nonsending) static func listenForConnections(
        host: String = "127.0.0.1", port: Int, backlog: Int32 = 511, reusePort: Bool = false,
        on loop: EventLoop = .main, file: StaticString = #fileID, line: UInt = #line
    ) async throws(EventLoopError) -> ConnectionListener<TCPConnection> {
        let queue = IncomingConnectionQueue<TCPConnection>()
        let listener = try await listenAsync(
            host: host, port: port, backlog: backlog, reusePort: reusePort, on: loop, file: file, line: line
        ) { connection in
            queue.offer(connection)
        }
        return ConnectionListener(
            queue: queue, openConnections: listener.openConnections, localAddress: listener.localAddress,
            close: { listener.close() }, closeGracefully: { listener.closeGracefully(deadline: $0) })
    }
}

extension ConnectionListener where Connection == TCPConnection {
    /// The port the TCP listener listens on.
    public var port: Int { localAddress?.port ?? 0 }
}

extension PipeListener {
    /// Listens at `path` like ``listenAsync(path:backlog:on:onAccept:)-(_,_,EventLoop,_)``, and hands
    /// out the accepted connections as an `AsyncSequence` rather than to a handler (see
    /// ``ConnectionListener``).
    ///
    /// ```swift
    /// let server = try await PipeListener.listenForConnections(path: folder + "/app.sock")
    /// for await connection in server.connections { connection.close() }
    /// ```
    public nonisolated(nonsending) static func listenForConnections(
        path: String, backlog: Int32 = 511, on loop: EventLoop = .main
    ) async throws(EventLoopError) -> ConnectionListener<PipeConnection> {
        let queue = IncomingConnectionQueue<PipeConnection>()
        let listener = try await listenAsync(path: path, backlog: backlog, on: loop) { connection in
            queue.offer(connection)
        }
        return ConnectionListener(
            queue: queue, openConnections: listener.openConnections, localAddress: nil,
            close: { listener.close() }, closeGracefully: { listener.closeGracefully(deadline: $0) })
    }
}

extension StreamConnection {
    /// Writes `bytes` and waits until libuv has handed them to the kernel, from async code: as
    /// `try await write(bytes).get()`. Throws the write's error, such as `EPIPE: broken pipe`. It waits
    /// on the caller's executor: a main-actor caller's wait holds the main loop, as `Future.get()`'s does.
    ///
    /// ```swift
    /// try await connection.writeAsync([0x68, 0x69])
    /// ```
    public nonisolated(nonsending) func writeAsync(_ bytes: [UInt8]) async throws {
        try await write(bytes).get()
    }

    /// Writes `text` as UTF-8 and waits until libuv has handed it to the kernel, from async code: as
    /// `try await write(text).get()`.
    ///
    /// ```swift
    /// try await connection.writeAsync("hello\r\n")
    /// ```
    public nonisolated(nonsending) func writeAsync(_ text: String) async throws {
        try await write(text).get()
    }
}
