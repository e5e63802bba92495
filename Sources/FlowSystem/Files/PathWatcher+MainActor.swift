import Flow

extension PathWatcher {
    /// Starts watching `path` on the main loop like
    /// ``watchAsync(_:keepsLoopAlive:coalescing:on:handler:)-(_,_,_,EventLoop,_)``, with a main-actor
    /// handler: for programs that keep what a change affects (a reloaded configuration, a list of
    /// files) in main-actor state (see `MainActorScheduler`).
    ///
    /// ```swift
    /// var changedFiles: [String] = []   // main-actor state
    /// let watcher = try await PathWatcher.watchAsync(folder, on: .mainActor) { change in
    ///     changedFiles.append(change.name ?? folder)
    /// }
    /// ```
    public static func watchAsync(
        _ path: String, keepsLoopAlive: Bool = true, coalescing: Double? = nil, on mainActor: MainActorScheduler,
        handler: @escaping @MainActor (Change) -> Void
    ) async throws(EventLoopError) -> PathWatcher {
        // The main loop reports the change, and its work is main-actor work.
        try await watchAsync(
            path, keepsLoopAlive: keepsLoopAlive, coalescing: coalescing, on: .main, handler: mainActor.callback(handler))
    }
}
