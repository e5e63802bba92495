import Flow
import FlowSystem
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Process groups")
struct ProcessGroupTests {
    /// A process's state letter, process group and session, from `/proc/<pid>/stat`; nil once the
    /// process is gone (reaped).
    static func status(of pid: Int32) -> (state: Character, group: Int32, session: Int32)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let nameEnd = stat.lastIndex(of: ")")
        else { return nil }
        // After the command's name: state, parent, group, session.
        let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
        guard fields.count > 3, let state = fields[0].first, let group = Int32(fields[2]),
              let session = Int32(fields[3])
        else { return nil }
        return (state, group, session)
    }

    /// Whether `pid` still runs: it exists and is not a zombie waiting to be reaped (a grandchild
    /// killed with its group is reaped by whichever process adopted it, at its own pace).
    static func isRunning(_ pid: Int32) -> Bool {
        guard let status = status(of: pid) else { return false }
        return status.state != "Z" && status.state != "X"
    }

    /// Waits until `pid` no longer runs: a signal reaches its target after `kill` returns. There is no
    /// event to wait on for a process that is not our child, so this looks every few milliseconds, for
    /// at most the hang guard's time.
    static func waitUntilGone(_ pid: Int32) -> Bool {
        let deadline = Date().addingTimeInterval(Double(hangGuardSeconds))
        while isRunning(pid) {
            if Date() > deadline { return false }
            usleep(5_000)
        }
        return true
    }

    /// The process id a script wrote to `path`.
    static func pid(writtenTo path: String) throws -> Int32 {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test func aRunThatTimesOutKillsTheScriptAndWhatItStartedAndFailsWithTimedOut() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let sleepFile = folder.file("sleep.pid")
        let found = Shared<Result<ProcessOutput>?>(nil)
        try runLoop { loop in
            // The shell writes its sleep's id, then waits for it: at the deadline both run.
            ChildProcess.run(
                "/bin/sh", arguments: ["-c", "sleep 30 & echo $! > \"$1\"; wait; date", "sh", sleepFile],
                timeout: 1, on: loop
            )
            .onResult { found.value = $0 }
        }
        let sleepPid = try Self.pid(writtenTo: sleepFile)
        defer { _ = Glibc.kill(sleepPid, SIGKILL) }
        #expect(throws: ChildProcessTimeoutError(seconds: 1)) { try #require(found.value).get() }
        #expect(Self.waitUntilGone(sleepPid), "the script's sleep outlived the timeout")
    }

    /// Code written before timeouts existed switches over `ChildProcessError` with no `default`: it
    /// compiles only while the enum keeps its cases, which it does because the timeout is an error type
    /// of its own.
    @Test func aSwitchOverChildProcessErrorWrittenBeforeTimeoutsStillCompilesAndCovers() {
        func explain(_ error: ChildProcessError) -> String {
            switch error {
            case .outputLimitExceeded(let limit): return "over \(limit) bytes"
            }
        }
        #expect(explain(.outputLimitExceeded(limit: 10)) == "over 10 bytes")
        let timeout: any Error = ChildProcessTimeoutError(seconds: 1)
        #expect(!(timeout is ChildProcessError))
        #expect("\(timeout)" == "the process was still running after 1.0 s; it was killed")
    }

    @Test func aRunThatEndsBeforeItsTimeoutSucceedsAndLeavesNoTimerBehind() throws {
        let found = Shared<Result<ProcessOutput>?>(nil)
        // A deadline timer left armed would keep the loop running past the hang guard.
        try runLoopCheckingHandles { loop in
            ChildProcess.run("/bin/sh", arguments: ["-c", "echo done"], timeout: 3600, on: loop)
                .onResult { found.value = $0 }
        }
        let output = try #require(found.value).get()
        #expect(output.outputText == "done\n")
        #expect(output.termination.isSuccess)
    }

    @Test func killGroupReachesWhatAChildInANewGroupStarted() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let sleepFile = folder.file("sleep.pid")
        let termination = Shared<ChildProcess.Termination?>(nil)
        try runLoop { loop in
            do {
                // The file appears whole (written, then renamed) once the sleep has started.
                let child = try ChildProcess.spawn(
                    "/bin/sh",
                    arguments: ["-c", "sleep 30 & echo $! > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"; wait", "sh", sleepFile],
                    processGroup: .new, on: loop)
                waitForFile(sleepFile, on: loop) {
                    child.killGroup(.kill)
                    child.exit.onValue { termination.value = $0 }
                }
            } catch {
                Issue.record(error)
            }
        }
        let sleepPid = try Self.pid(writtenTo: sleepFile)
        defer { _ = Glibc.kill(sleepPid, SIGKILL) }
        #expect(termination.value == ChildProcess.Termination(exitCode: 0, signal: .kill))
        #expect(Self.waitUntilGone(sleepPid), "the shell's sleep outlived killGroup")
    }

    @Test func aChildStaysInThisProgramsGroupByDefaultAndLeadsItsOwnWithNew() throws {
        let groups = Shared<[(pid: Int32, group: Int32, session: Int32)]>([])
        try runLoop { loop in
            do {
                // Each child waits on its input, so its group can be read before it exits.
                let byDefault = try ChildProcess.spawn(
                    "/bin/sh", arguments: ["-c", "read line"], standardInput: .pipe, on: loop)
                let inNewGroup = try ChildProcess.spawn(
                    "/bin/sh", arguments: ["-c", "read line"], standardInput: .pipe, processGroup: .new, on: loop)
                #expect(byDefault.processGroup == .inherit)
                #expect(inNewGroup.processGroup == .new)
                for child in [byDefault, inNewGroup] {
                    if let status = Self.status(of: child.processIdentifier) {
                        groups.mutate { $0.append((child.processIdentifier, status.group, status.session)) }
                    }
                    child.standardInput?.close()
                }
            } catch {
                Issue.record(error)
            }
        }
        let found = groups.value
        try #require(found.count == 2)
        #expect(found[0].group == getpgrp())
        #expect(found[0].session == getsid(0))
        #expect(found[1].group == found[1].pid)
        #expect(found[1].session == found[1].pid)
    }
}

/// Runs `then` on `loop` once `path` exists: polled on the loop's timer, since a script's write is
/// no event of ours.
private func waitForFile(_ path: String, on loop: EventLoop, then: @escaping @Sendable () -> Void) {
    if FileManager.default.fileExists(atPath: path) {
        then()
    } else {
        loop.scheduler.async(after: 0.005) { waitForFile(path, on: loop, then: then) }
    }
}
