import Foundation
import Testing

/// Every misuse of the matrix that stops the program (Docs/MisuseMatrix.md), with the message it must
/// print, run in the `MisuseProbe` child process: the debug build always, and the release build when
/// `FLOW_RELEASE_MISUSE_PROBE` names one (CI builds it with `swift build -c release --product MisuseProbe`).
/// `precondition` prints its message only in debug builds: this is what shows that the messages
/// survive optimisation.
@Suite("Misuse: messages in debug and release builds")
struct MisuseMessageTests {
    static let expectedMessages: [String: String] = [
        "mustFillTwice": "mustFill(with:): the promise was already filled",
        "executeOnClosedLoop": "EventLoop.execute: work was submitted to the closed loop 'probe.closed'; it cannot run",
        "shutdownOnTheLoopThread":
            "EventLoop.shutdown(): called on the loop's own thread, which would wait for itself",
        "waitOnTheLoopThread":
            "called inside the work of the event loop 'probe.wait', which cannot run while its thread waits",
        "syncCycleBetweenLoops":
            "Scheduler.sync: the event loop 'probe.other' would wait for the loop 'flow.main', which is itself waiting in Scheduler.sync for 'probe.other'",
        "nanLoopDelay": "EventLoop.execute(after:): the delay must be a finite number of seconds, not nan",
        "infiniteLoopDelay": "EventLoop.execute(after:): the delay must be a finite number of seconds, not inf",
        "negativeInfiniteLoopDelay":
            "EventLoop.execute(after:): the delay must be a finite number of seconds, not -inf",
        "infiniteSchedulerDelay": "Scheduler.async(after:): the delay must be a finite number of seconds, not inf",
        "nanFutureDelay": "Future.delay: the delay must be a finite number of seconds, not nan",
        "negativeMaxRepetitions": "onErrorRepeat/onResultRepeat: maxRepetitions must be 0 or more, not -1",
        "zeroConcurrencyQueue": "maxConcurrentCount must be at least 1",
        "selectBetweenNothing": "select(between:) needs at least one future",
        "signalSendFromCleanUp": "Signal: a value was sent from inside the signal's own clean-up",
        "negativeTake": "take(first:): the count must not be negative, not -1",
        "negativeDebounce": "debounce: the delay must be a finite number of seconds ≥ 0, not -1.0",
        "udpSendOnClosedMainLoop": "UDPSocket.send: the loop 'flow.main' is closed, so its handles cannot be used any more",
        "udpCloseOnClosedMainLoop": "UDPSocket.close: the loop 'flow.main' is closed, so its handles cannot be used any more",
        "listenerGroupWithoutLoops": "TCPListenerGroup.listen: give at least one loop",
        "bindOnALoopNotRunning": "UDPSocket.bind: the loop 'probe.idle' is not running, so nothing would run this and the caller would wait for ever",
        "tcpSendOnClosedMainLoop": "TCPConnection.send: the loop 'flow.main' is closed, so its handles cannot be used any more",
        "closeGracefullyWithNaN":
            "TCPListener.closeGracefully(deadline:): the deadline must be 0 or more seconds (.infinity waits for every connection to close), not nan",
        "closeGracefullyWithNegativeDeadline":
            "TCPListener.closeGracefully(deadline:): the deadline must be 0 or more seconds (.infinity waits for every connection to close), not -1.0",
        "metricsEveryInfinity":
            "FlowMetrics.start(every:): the interval must be a finite number of seconds, at most a year (31536000), not inf",
        "metricsEveryNaN":
            "FlowMetrics.start(every:): the interval must be a finite number of seconds, at most a year (31536000), not nan",
        "metricsEveryHugeInterval":
            "FlowMetrics.start(every:): the interval must be a finite number of seconds, at most a year (31536000), not 1e+20",
        "negativeFrameMaximum":
            "StreamConnection.frames(lengthPrefix:maximumLength:): the maximum length must not be negative, not -1",
    ]

    static var cases: [String] { expectedMessages.keys.sorted() }

    /// The release build of the probe, if CI (or you) built one and named it.
    static let releaseProbe: String? = ProcessInfo.processInfo.environment["FLOW_RELEASE_MISUSE_PROBE"]

    @Test("the probe knows exactly the cases checked here")
    func probeListsTheCheckedCases() throws {
        let run = try runMisuseProbe(debugProbePath(), "--list")
        #expect(run.output.split(separator: "\n").map(String.init).sorted() == Self.cases)
    }

    @Test("in a debug build, each misuse stops the program with its message", arguments: cases)
    func debugBuildStopsWithTheMessage(_ misuse: String) throws {
        try expectStop(probe: debugProbePath(), misuse)
    }

    @Test(
        "in a release build, each misuse stops the program with its message",
        .enabled(if: releaseProbe != nil, "set FLOW_RELEASE_MISUSE_PROBE to a release build of MisuseProbe"),
        arguments: cases)
    func releaseBuildStopsWithTheMessage(_ misuse: String) throws {
        try expectStop(probe: #require(Self.releaseProbe), misuse)
    }

    private func expectStop(probe: String, _ misuse: String) throws {
        let run = try runMisuseProbe(probe, misuse)
        #expect(run.status != 0 && run.status != 3, "the probe exited with \(run.status): \(run.output)")
        let expected = try #require(Self.expectedMessages[misuse])
        #expect(run.errorOutput.contains(expected), "stderr: \(run.errorOutput.prefix(2000))")
    }
}

private func debugProbePath() throws -> String {
    try builtExecutable("MisuseProbe").path
}

/// Runs the probe at `path` with `argument`; returns its exit status and output.
private func runMisuseProbe(_ path: String, _ argument: String) throws -> ProbeRun {
    try runProbe(at: path, arguments: [argument])
}
