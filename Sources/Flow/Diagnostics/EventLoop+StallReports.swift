import Dispatch

extension EventLoop {
    /// Reports through ``FlowDiagnostics`` when this loop goes longer than `threshold` seconds without
    /// running the work sent to it: a callback that blocks, or a loop that nobody runs.
    ///
    /// A timer on a Dispatch queue sends the loop a probe every `threshold / 2` seconds, one at a time.
    /// When a probe has waited longer than `threshold`, a ``FlowDiagnostics/Level/warning`` names the
    /// loop (metadata `loop`, `blockedMilliseconds`); when it finally runs, an
    /// ``FlowDiagnostics/Level/info`` report says for how long the loop was blocked. The loop's own
    /// work is not timed, so this costs nothing per callback. Reporting stops when the returned
    /// disposable is disposed (dropping it does not stop them) or the loop is closed.
    ///
    /// ```swift
    /// let loop = EventLoop.startOnNewThread(name: "api")
    /// bag += loop.reportStalls(longerThan: 0.1)   // warn when a callback holds the loop for 100 ms
    /// ```
    ///
    /// - Parameter threshold: how long the loop may go without running its queue, in seconds (at
    ///   least a millisecond).
    /// - Returns: a disposable that stops the reports.
    @discardableResult
    public func reportStalls(longerThan threshold: Double) -> Disposable {
        misusePrecondition(threshold.isFinite && threshold > 0, "EventLoop.reportStalls(longerThan:): the threshold must be a positive number of seconds, not \(threshold)")
        let watchdog = StallWatchdog(loop: self, thresholdNanoseconds: UInt64(max(threshold, 0.001) * 1e9))
        watchdog.start()
        return StallReportsCancellation(watchdog: watchdog)
    }
}

/// Stops a watchdog when disposed, and only then: reports go on while the loop is open even if the
/// disposable is dropped.
private struct StallReportsCancellation: Disposable {
    let watchdog: StallWatchdog
    func dispose() { watchdog.stop() }
}

/// Sends probes to a loop and reports the ones that wait too long: see
/// ``EventLoop/reportStalls(longerThan:)``.
// @unchecked Sendable: `state` is guarded by its lock; `timer` is a Dispatch source, whose methods are
// thread-safe (Dispatch does not mark its protocol Sendable).
private final class StallWatchdog: @unchecked Sendable {
    private struct State {
        /// When the probe now in the loop's queue was sent; `nil` when none is.
        var probeSentAt: UInt64?
        var isStallReported = false
        var isStopped = false
    }

    private enum Tick {
        case sendProbe
        case reportStall(waitedNanoseconds: UInt64)
        case nothing
    }

    private let loop: EventLoop
    private let thresholdNanoseconds: UInt64
    private let state = Locked(State())
    private let timer: DispatchSourceTimer

    init(loop: EventLoop, thresholdNanoseconds: UInt64) {
        self.loop = loop
        self.thresholdNanoseconds = thresholdNanoseconds
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "flow.stallWatchdog.\(loop.name)"))
    }

    func start() {
        let interval = DispatchTimeInterval.nanoseconds(Int(max(thresholdNanoseconds / 2, 500_000)))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [self] in tick() }
        timer.activate()
    }

    func stop() {
        let wasStopped = state.withLock { state -> Bool in
            defer { state.isStopped = true }
            return state.isStopped
        }
        if !wasStopped { timer.cancel() }
    }

    private func tick() {
        let now = EventLoop.uptimeNanoseconds
        let action = state.withLock { state -> Tick in
            guard !state.isStopped else { return .nothing }
            guard let sentAt = state.probeSentAt else {
                state.probeSentAt = now
                return .sendProbe
            }
            guard !state.isStallReported, now - sentAt > thresholdNanoseconds else { return .nothing }
            state.isStallReported = true
            return .reportStall(waitedNanoseconds: now - sentAt)
        }
        switch action {
        case .sendProbe:
            do {
                try loop.submit { [self] in probeRan() }
            } catch {
                stop()   // the loop is closed
            }
        case .reportStall(let waited):
            FlowDiagnostics.report(
                .warning, "event loop \(loop.name) has not run its queue for \(waited / 1_000_000) ms",
                metadata: ["loop": loop.name, "blockedMilliseconds": "\(waited / 1_000_000)"])
        case .nothing:
            break
        }
    }

    private func probeRan() {
        let now = EventLoop.uptimeNanoseconds
        let (sentAt, wasReported) = state.withLock { state -> (UInt64, Bool) in
            defer {
                state.probeSentAt = nil
                state.isStallReported = false
            }
            return (state.probeSentAt ?? now, state.isStallReported)
        }
        guard wasReported else { return }
        let blocked = (now - sentAt) / 1_000_000
        FlowDiagnostics.report(
            .info, "event loop \(loop.name) ran its queue again after \(blocked) ms",
            metadata: ["loop": loop.name, "blockedMilliseconds": "\(blocked)"])
    }
}
