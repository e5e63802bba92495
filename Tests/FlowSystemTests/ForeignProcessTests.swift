import Dispatch
import Flow
import FlowSystem
import Foundation
import Testing

/// libuv learns of its children's exits through a process-wide `SIGCHLD` handler, and reaps only its
/// own children (`waitpid` on each child's pid). Foundation's `Process` waits for its children its own
/// way. These tests run both in one process, interleaved, and check that neither loses an exit.
@Suite("ChildProcess next to Foundation's Process")
struct ForeignProcessTests {
    /// Runs `sh -c "sleep 0.05; exit <code>"` with Foundation's `Process` on a Dispatch thread, adding
    /// the exit status it sees to `statuses` (the short sleep keeps the children's lives overlapping).
    static func runWithFoundation(exitCode: Int, into statuses: Shared<[Int32]>, group: DispatchGroup) {
        DispatchQueue.global().async(group: group) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "sleep 0.05; exit \(exitCode)"]
            do {
                try process.run()
                process.waitUntilExit()
                statuses.mutate { $0.append(process.terminationStatus) }
            } catch {
                statuses.mutate { $0.append(-1) }
            }
        }
    }

    @Test func childProcessesAndFoundationProcessesInterleavedAllReportTheirExits() throws {
        let foundationStatuses = Shared<[Int32]>([])
        let libuvExitCodes = Shared<[Int]>([])
        let foundationRuns = DispatchGroup()
        try runLoop { loop in
            for round in 0..<4 {
                // One of each kind alive at once, started in alternating order.
                if round.isMultiple(of: 2) {
                    Self.runWithFoundation(exitCode: 10 + round, into: foundationStatuses, group: foundationRuns)
                }
                let child = try! ChildProcess.spawn("/bin/sh", arguments: ["-c", "sleep 0.05; exit \(round)"], on: loop)
                child.exit.onValue { termination in libuvExitCodes.mutate { $0.append(termination.exitCode) } }
                if !round.isMultiple(of: 2) {
                    Self.runWithFoundation(exitCode: 10 + round, into: foundationStatuses, group: foundationRuns)
                }
            }
        }
        let finished = foundationRuns.wait(timeout: .now() + .seconds(hangGuardSeconds))
        #expect(finished == .success, "a Foundation Process never saw its child exit")
        #expect(libuvExitCodes.value.sorted() == [0, 1, 2, 3])
        #expect(foundationStatuses.value.sorted() == [10, 11, 12, 13])
    }

    @Test func foundationProcessesSeeTheirExitsWhileASignalWatcherWatchesSIGCHLD() throws {
        let foundationStatuses = Shared<[Int32]>([])
        let childSignals = Shared(0)
        let foundationFinished = Shared(false)
        let foundationRuns = DispatchGroup()
        try runLoop { loop in
            let watcher = LoopState<SignalWatcher?>(nil)
            // Closes the watcher once every Foundation child was reaped and at least one SIGCHLD came
            // (one must: a child exited while the watcher was open; several may merge into one).
            let closeWhenDone: @Sendable () -> Void = {
                if foundationFinished.value, childSignals.value > 0 { watcher.value?.close() }
            }
            watcher.value = try! SignalWatcher.watch([ProcessSignal(rawValue: SIGCHLD)], on: loop) { _ in
                childSignals.mutate { $0 += 1 }
                closeWhenDone()
            }
            for round in 0..<4 {
                Self.runWithFoundation(exitCode: 20 + round, into: foundationStatuses, group: foundationRuns)
            }
            foundationRuns.notify(queue: .global()) {
                loop.execute {
                    foundationFinished.value = true
                    closeWhenDone()
                }
            }
        }
        #expect(foundationStatuses.value.sorted() == [20, 21, 22, 23])
        #expect(childSignals.value >= 1)
    }

    @Test func aChildProcessReportsItsExitWhileFoundationProcessesRunOnOtherThreads() throws {
        // Foundation first, then libuv's spawn installing its SIGCHLD handler while they run.
        let foundationStatuses = Shared<[Int32]>([])
        let libuvExitCodes = Shared<[Int]>([])
        let foundationRuns = DispatchGroup()
        for round in 0..<3 {
            Self.runWithFoundation(exitCode: 30 + round, into: foundationStatuses, group: foundationRuns)
        }
        try runLoop { loop in
            for round in 0..<3 {
                let child = try! ChildProcess.spawn("/bin/sh", arguments: ["-c", "exit \(round)"], on: loop)
                child.exit.onValue { termination in libuvExitCodes.mutate { $0.append(termination.exitCode) } }
            }
        }
        let finished = foundationRuns.wait(timeout: .now() + .seconds(hangGuardSeconds))
        #expect(finished == .success, "a Foundation Process never saw its child exit")
        #expect(libuvExitCodes.value.sorted() == [0, 1, 2])
        #expect(foundationStatuses.value.sorted() == [30, 31, 32])
    }
}
