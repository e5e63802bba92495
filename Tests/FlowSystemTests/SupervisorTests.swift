import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The Supervisor example run as a child process, its output read line by line.
func supervisorProcess(_ arguments: [String]) throws -> ExampleProcess {
    try ExampleProcess("Supervisor", arguments: arguments)
}

extension ExampleProcess {
    /// The next line printed, without its time stamp, or `nil` at the end of the output.
    func readMessage() -> String? {
        guard let line = readLine() else { return nil }
        #expect(line.hasPrefix("[+") && line.contains(" ms] ") || !line.hasPrefix("["), "stamped: \(line)")
        return line.hasPrefix("[+") ? String(line.drop { $0 != "]" }.dropFirst(2)) : line
    }

    /// Every line printed until the end of the output, without time stamps.
    func readAll() -> [String] {
        var lines: [String] = []
        while let line = readMessage() { lines.append(line) }
        return lines
    }
}

@Suite("Supervisor example")
struct SupervisorTests {
    @Test func aCommandThatKeepsFailingIsRetriedWithGrowingDelaysThenGivenUp() throws {
        let supervisor = try supervisorProcess(
            ["--max-attempts", "3", "--initial-delay", "0.02", "--", "/bin/sh", "-c", "exit 4"])
        let lines = supervisor.readAll()
        #expect(supervisor.waitForExit() == 1)
        #expect(lines == [
            "supervising /bin/sh -c exit 4: up to 3 attempts, backoff from 0.02 s",
            "attempt 1 of 3: starting /bin/sh -c exit 4",
            "attempt 1: exit code 4",
            "waiting 20 ms before attempt 2",
            "attempt 2 of 3: starting /bin/sh -c exit 4",
            "attempt 2: exit code 4",
            "waiting 40 ms before attempt 3",
            "attempt 3 of 3: starting /bin/sh -c exit 4",
            "attempt 3: exit code 4",
            "giving up after 3 attempts",
        ])
    }

    @Test func aCommandThatSucceedsOnItsThirdAttemptEndsTheSupervisorWithZero() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let counter = folder.file("count")
        let script = "n=$(cat \(counter) 2>/dev/null || echo 0); n=$((n+1)); echo $n > \(counter); echo run $n; [ $n -ge 3 ]"
        let supervisor = try supervisorProcess(["--initial-delay", "0.01", "--", "/bin/sh", "-c", script])
        let lines = supervisor.readAll()
        #expect(supervisor.waitForExit() == 0)
        #expect(lines.filter { $0.hasPrefix("run ") } == ["run 1", "run 2", "run 3"], "the command's own output")
        #expect(lines.last == "done: the command succeeded on attempt 3")
    }

    @Test func sigtermIsPassedOnToTheCommandAndTheSupervisorExitsZero() throws {
        let supervisor = try supervisorProcess(["--", "/bin/sh", "-c", "echo ready; exec sleep 30"])
        while let line = supervisor.readMessage(), line != "ready" {}
        supervisor.send(SIGTERM)
        let lines = supervisor.readAll()
        #expect(supervisor.waitForExit() == 0)
        #expect(lines.first?.hasPrefix("received SIGTERM: passing it on to the command (pid ") == true, "\(lines)")
        #expect(lines.last == "stopped: the command ended (killed by SIGTERM)")
    }

    @Test func aCommandThatCannotBeStartedIsAClearError() throws {
        let supervisor = try supervisorProcess(["--", "/no/such/program"])
        let lines = supervisor.readAll()
        #expect(supervisor.waitForExit() == 2)
        #expect(lines.last == "attempt 1: cannot start /no/such/program: ENOENT: no such file or directory")
    }
}
