import Flow

extension SignalWatcher {
    /// Starts watching `signals` on the main loop like ``watchAsync(_:keepsLoopAlive:on:handler:)-(_,_,EventLoop,_)``, with
    /// a main-actor handler: for programs that keep what a signal changes (a reload count, a shutdown
    /// flag) in main-actor state (see `MainActorScheduler`).
    ///
    /// ```swift
    /// var reloads = 0   // main-actor state
    /// let watcher = try await SignalWatcher.watchAsync([.hangUp], on: .mainActor) { _ in reloads += 1 }
    /// ```
    public static func watchAsync(
        _ signals: [ProcessSignal], keepsLoopAlive: Bool = true, on mainActor: MainActorScheduler,
        handler: @escaping @MainActor (ProcessSignal) -> Void
    ) async throws(EventLoopError) -> SignalWatcher {
        // The main loop delivers the signal, and its work is main-actor work.
        try await watchAsync(signals, keepsLoopAlive: keepsLoopAlive, on: .main, handler: mainActor.callback(handler))
    }
}
