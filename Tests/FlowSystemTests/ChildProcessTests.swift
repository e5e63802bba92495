import Flow
import Foundation
import FlowNet
import FlowSystem
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Child processes")
struct ChildProcessTests {
    @Test func runCollectsOutputErrorAndTheExitCode() throws {
        let found = Shared<Result<ProcessOutput>?>(nil)
        try runLoop { loop in
            ChildProcess.run("/bin/sh", arguments: ["-c", "echo out; echo err >&2; exit 3"], on: loop)
                .onResult { found.value = $0 }
        }
        let output = try #require(found.value).get()
        #expect(output.outputText == "out\n")
        #expect(output.errorText == "err\n")
        #expect(output.termination == ChildProcess.Termination(exitCode: 3, signal: nil))
        #expect(!output.termination.isSuccess)
        #expect("\(output.termination)" == "exit code 3")
    }

    @Test func argumentsEnvironmentWorkingDirectoryAndInputReachTheChild() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let found = Shared<Result<ProcessOutput>?>(nil)
        try runLoop { loop in
            ChildProcess.run(
                "sh", arguments: ["-c", "printf '%s|%s|%s|' \"$1\" \"$GREETING\" \"$(pwd)\"; cat", "sh", "one two"],
                environment: ["GREETING": "hello", "PATH": "/usr/bin:/bin"], workingDirectory: folder.path,
                input: Array("from stdin".utf8), on: loop)
                .onResult { found.value = $0 }
        }
        let output = try #require(found.value).get()
        #expect(output.outputText == "one two|hello|\(folder.path)|from stdin")
        #expect(output.termination.isSuccess)
    }

    @Test func aMissingExecutableIsAClearErrorAndLeavesNothingOpen() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let failures = Shared<[String]>([])
        try runLoop { loop in
            do {
                _ = try ChildProcess.spawn(folder.file("no-such-program"), standardOutput: .pipe, on: loop)
            } catch {
                failures.mutate { $0.append("\(error)") }
            }
            ChildProcess.run("/bin/true", workingDirectory: folder.file("missing"), on: loop).onError { error in
                failures.mutate { $0.append("\(error)") }
            }
        }
        #expect(failures.value == ["ENOENT: no such file or directory", "ENOENT: no such file or directory"])
    }

    @Test func aNulByteInACommandsStringsIsRefusedRatherThanCutShort() throws {
        let folder = try TemporaryFolder()
        defer { folder.cleanUp() }
        let failures = Shared<[String]>([])
        try runLoop { loop in
            // Each of these would reach the child cut at the NUL byte ("echo", "ab", "K=v", ...), or
            // with a variable named after the `=`, if it were passed on.
            typealias Attempt = (
                executable: String, arguments: [String], environment: [String: String]?, directory: String?
            )
            let attempts: [Attempt] = [
                ("/bin/echo\u{0}--evil", [], nil, nil),
                ("/bin/echo", ["a\u{0}b"], nil, nil),
                ("/bin/echo", [], ["K\u{0}X": "v"], nil),
                ("/bin/echo", [], ["K": "v\u{0}w"], nil),
                ("/bin/echo", [], ["K=X": "v"], nil),
                ("/bin/echo", [], ["": "v"], nil),
                ("/bin/echo", [], nil, folder.path + "\u{0}/missing"),
            ]
            for attempt in attempts {
                do {
                    let child = try ChildProcess.spawn(
                        attempt.executable, arguments: attempt.arguments, environment: attempt.environment,
                        workingDirectory: attempt.directory, standardOutput: .ignore, on: loop)
                    failures.mutate { $0.append("spawned \(child)") }
                } catch {
                    failures.mutate { $0.append("\(error)") }
                }
            }
            ChildProcess.run("/bin/echo", arguments: ["a\u{0}b"], on: loop).onResult { result in
                failures.mutate { $0.append(result.error.map { "\($0)" } ?? "ran") }
            }
        }
        #expect(failures.value == Array(repeating: "EINVAL: invalid argument", count: 8))
    }

    @Test func aNegativeOutputLimitStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = ChildProcess.run("/bin/true", outputLimit: -1, on: EventLoop(name: "negative.limit"))
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("ChildProcess.run: the output limit must not be negative, not -1"), "\(output)")
    }

    @Test func aChildThatExitsAtOnceReportsItsExit() throws {
        let terminations = Shared<[ChildProcess.Termination]>([])
        try runLoop { loop in
            for program in ["/bin/true", "/bin/false"] {
                let child = try! ChildProcess.spawn(program, on: loop)
                #expect(child.processIdentifier > 0)
                child.exit.onValue { termination in terminations.mutate { $0.append(termination) } }
            }
        }
        #expect(Set(terminations.value) == [.init(exitCode: 0, signal: nil), .init(exitCode: 1, signal: nil)])
    }

    @Test func aChildThatIgnoresSIGTERMLivesOnUntilKilled() throws {
        let lines = Shared<[String]>([])
        let termination = Shared<ChildProcess.Termination?>(nil)
        let killAfterExit = Shared<String?>(nil)
        try runLoop { loop in
            let child = try! ChildProcess.spawn(
                "/bin/sh", arguments: ["-c", "trap '' TERM; echo ready; read line; echo alive; read line"],
                standardInput: .pipe, standardOutput: .pipe, on: loop)
            let output = child.standardOutput!
            output.onRead { event in
                guard case .bytes(let bytes) = event else { output.close(); return }
                let text = String(decoding: bytes, as: UTF8.self)
                for line in text.split(separator: "\n") { lines.mutate { $0.append(String(line)) } }
                if text.contains("ready") {
                    // SIGTERM is pending before the child reads the line: were it not ignored, the
                    // child would end before answering.
                    child.kill(.terminate).onValue { _ = child.standardInput!.write("go\n") }
                } else if text.contains("alive") {
                    child.kill(.kill)
                }
            }
            child.exit.onValue { ended in
                termination.value = ended
                child.standardInput!.close()
                child.kill().onError { killAfterExit.value = "\($0)" }
            }
        }
        #expect(lines.value == ["ready", "alive"])
        #expect(termination.value == ChildProcess.Termination(exitCode: 0, signal: .kill))
        #expect(killAfterExit.value == "ESRCH: no such process")
    }

    @Test func outputBeyondTheLimitKillsTheChildWithAClearError() throws {
        let found = Shared<Result<ProcessOutput>?>(nil)
        try runLoop { loop in
            ChildProcess.run("/bin/sh", arguments: ["-c", "while :; do echo xxxxxxxxxxxxxxxxxxxx; done"],
                             outputLimit: 10_000, on: loop)
                .onResult { found.value = $0 }
        }
        let result = try #require(found.value)
        #expect(result.error as? ChildProcessError == .outputLimitExceeded(limit: 10_000))
        #expect("\(result.error!)" == "the process wrote more than 10000 bytes of output; it was killed")
    }

    /// In a process of its own (an exit test): the other suites open pipes and sockets in parallel, so
    /// only there is this process's count of them exact. One child runs first, so that what libuv opens
    /// once per process (its signal lock's pipe) is counted before, not as a leak.
    @Test func manyShortChildrenLeaveNoDescriptorOpen() async {
        await #expect(processExitsWith: .success) {
            func pipesAndSockets() -> [String] {
                openDescriptorTargets().filter { $0.hasPrefix("pipe:") || $0.hasPrefix("socket:") }
            }
            let outputs = Shared<[String]>([])
            func runChildren(_ count: Int) throws {
                try runLoop { loop in
                    for index in 0..<count {
                        ChildProcess.run("/bin/echo", arguments: ["\(index)"], on: loop).onValue { output in
                            outputs.mutate { $0.append(output.outputText) }
                        }
                    }
                }
            }
            try runChildren(1)
            let before = pipesAndSockets()
            outputs.value = []
            try runChildren(20)
            let after = pipesAndSockets()
            guard Set(outputs.value) == Set((0..<20).map { "\($0)\n" }), after.count == before.count else {
                FileHandle.standardError.write(Data("outputs \(outputs.value); before \(before); after \(after)\n".utf8))
                exit(1)
            }
        }
    }
}
