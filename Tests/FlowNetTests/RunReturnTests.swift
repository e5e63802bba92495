import Foundation
import Testing

/// Issue #38: `EventLoop.main.run()` returns only when nothing will come back to the main loop. Each
/// scenario of `RunReturnProbe` sends work from the main loop to another scheduler (a transform's hop
/// to a queue or another loop, a timer there, a `perform`, a Deferred `upon`, a main-actor task reading
/// lines) and runs the main loop, round after round: every round's delivery must have been made when
/// `run()` returns. Without the rule, `run()` returned first in most rounds. A timer cancelled before it
/// fires must stop holding the loop: its rounds would otherwise wait for the probe's watchdog.
@Suite("run() waits for work on its way back to the main loop")
struct RunReturnTests {
    static let scenarios = [
        "signalMapOnBackground", "futureMapOnBackground", "futureHopsBetweenQueues", "futureFromAsyncOperation",
        "futureMapOnAnotherLoop", "timerOnBackground", "cancelledTimerOnBackground", "performFromMainActor",
        "bindAsyncFromMainActor", "fileChunksFromMainActor", "deferredOnBackground", "deferredValueFromMainActor",
        "linesUntilServerCloses", "listenAsyncFromMainActor", "connectionsFromMainActor", "timedLinesUntilServerCloses",
        "datagramsUntilSocketCloses",
    ]

    /// Runs `scenario` for `rounds` rounds in a child process and checks that each was delivered in time.
    static func expectEveryRoundDelivered(_ scenario: String, rounds: Int, underLoad: Bool = false) throws {
        let probe = try builtExecutable("RunReturnProbe").path
        let run = try runProbe(at: probe, arguments: [scenario, "\(rounds)"] + (underLoad ? ["load"] : []))
        #expect(run.status == 0, "\(run.output)\(run.errorOutput)")
        #expect(run.output == "\(scenario): \(rounds) of \(rounds) delivered before run() returned\n", "\(run.errorOutput)")
    }

    @Test("every round's delivery is made before run() returns", arguments: scenarios)
    func deliveredBeforeRunReturns(scenario: String) throws {
        try Self.expectEveryRoundDelivered(scenario, rounds: 40)
    }

    @Test("every round's delivery is made before run() returns while two threads keep the processors busy")
    func deliveredBeforeRunReturnsUnderLoad() throws {
        // One scenario at a time: the load of several at once would slow the other tests as well.
        for scenario in Self.scenarios {
            try Self.expectEveryRoundDelivered(scenario, rounds: 10, underLoad: true)
        }
    }
}
