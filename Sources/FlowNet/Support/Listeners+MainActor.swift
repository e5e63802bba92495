import Flow

extension TCPListener {
    /// Listens on `host` and `port` on the main loop like
    /// ``listenAsync(host:port:backlog:reusePort:on:file:line:onAccept:)-(_,_,_,_,EventLoop,_,_,_)``, with a main-actor accept
    /// handler: for servers that count or list their connections in main-actor state (see
    /// `MainActorScheduler`).
    ///
    /// ```swift
    /// @MainActor var openConnections = 0
    ///
    /// let listener = try await TCPListener.listenAsync(port: 7000, on: .mainActor) { connection in
    ///     openConnections += 1
    ///     connection.close()
    /// }
    /// ```
    public nonisolated(nonsending) static func listenAsync(
        host: String = "127.0.0.1", port: Int, backlog: Int32 = 511, reusePort: Bool = false,
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        onAccept: @escaping @MainActor (TCPConnection) -> Void
    ) async throws(EventLoopError) -> TCPListener {
        // The main loop accepts, and its work is main-actor work.
        try await listenAsync(
            host: host, port: port, backlog: backlog, reusePort: reusePort, on: .main, file: file, line: line,
            onAccept: mainActor.callback(onAccept))
    }

    /// Listens on `address` on the main loop like ``listenAsync(at:backlog:reusePort:on:file:line:onAccept:)``,
    /// with a main-actor accept handler (see `MainActorScheduler`).
    public nonisolated(nonsending) static func listenAsync(
        at address: SocketAddress, backlog: Int32 = 511, reusePort: Bool = false,
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        onAccept: @escaping @MainActor (TCPConnection) -> Void
    ) async throws(EventLoopError) -> TCPListener {
        try await listenAsync(
            at: address, backlog: backlog, reusePort: reusePort, on: .main, file: file, line: line,
            onAccept: mainActor.callback(onAccept))
    }
}

extension PipeListener {
    /// Listens at `path` on the main loop like ``listenAsync(path:backlog:on:onAccept:)-(_,_,EventLoop,_)``, with a
    /// main-actor accept handler (see `MainActorScheduler`).
    ///
    /// ```swift
    /// let listener = try await PipeListener.listenAsync(path: folder + "/app.sock", on: .mainActor) { connection in
    ///     clients.append(connection)   // main-actor state
    /// }
    /// ```
    public nonisolated(nonsending) static func listenAsync(
        path: String, backlog: Int32 = 511, on mainActor: MainActorScheduler,
        onAccept: @escaping @MainActor (PipeConnection) -> Void
    ) async throws(EventLoopError) -> PipeListener {
        try await listenAsync(path: path, backlog: backlog, on: .main, onAccept: mainActor.callback(onAccept))
    }
}

extension TCPListenerGroup {
    /// Listens on `host` and `port` on every loop in `loops` like
    /// ``listenAsync(host:port:backlog:loops:onAccept:)``, with a main-actor accept handler: each
    /// connection, accepted on one of the loops, is handed to the main loop, whose work is main-actor
    /// work, and the handler runs there (see `MainActorScheduler`). For servers that keep their list
    /// of connections in main-actor state; a connection's own reads and writes stay on the loop that
    /// accepted it.
    ///
    /// ```swift
    /// @MainActor var clients: [TCPConnection] = []
    ///
    /// let loops = (0..<2).map { EventLoop.startOnNewThread(name: "worker-\($0)") }
    /// let group = try await TCPListenerGroup.listenAsync(port: 8080, loops: loops, on: .mainActor) { connection in
    ///     clients.append(connection)
    /// }
    /// ```
    public nonisolated(nonsending) static func listenAsync(
        host: String = "127.0.0.1", port: Int, backlog: Int32 = 511, loops: [EventLoop],
        on mainActor: MainActorScheduler, onAccept: @escaping @MainActor (TCPConnection) -> Void
    ) async throws(EventLoopError) -> TCPListenerGroup {
        let mainActorAccept = mainActor.callback(onAccept)
        return try await listenAsync(host: host, port: port, backlog: backlog, loops: loops) { connection in
            // The main loop runs this, and its work is main-actor work.
            mainActor.scheduler.async { mainActorAccept(connection) }
        }
    }
}
