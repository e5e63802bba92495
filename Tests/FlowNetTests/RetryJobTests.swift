import Foundation
import Testing

@Suite("RetryJob example", .serialized)
struct RetryJobTests {
    /// Every line the program printed, until it exited; and its exit status.
    func run(_ arguments: [String]) throws -> (lines: [String], status: Int32) {
        let job = try ExampleProcess("RetryJob", arguments: arguments)
        var lines: [String] = []
        while let line = job.readLine() { lines.append(line) }
        return (lines, job.waitForExit())
    }

    @Test("RetryJob rides out a refusal, a hang-up and a timeout, and succeeds on the 4th attempt")
    func succeedsAfterRetries() throws {
        let (lines, status) = try run([])
        #expect(status == 0, "\(lines.joined(separator: "\n"))")
        let messages = lines.map { $0.drop { $0 != "]" }.dropFirst(2) }.map(String.init)
        #expect(messages.filter { $0.hasPrefix("attempt ") }.count == 4)
        #expect(messages.contains { $0.hasPrefix("attempt 1: connecting to localhost:") }, "reaches its service by name")
        #expect(messages.contains("  attempt failed: ECONNREFUSED: connection refused"))
        #expect(messages.contains("  attempt failed: the service closed the connection without answering"))
        #expect(messages.contains("  attempt failed: timed out after 0.5 s"))
        #expect(messages.filter { $0.hasPrefix("  waiting ") }.count == 3)
        #expect(messages.last?.hasPrefix("done: \"report #42: 17 jobs done, 0 failed\" after 4 attempts") == true)
        #expect(lines.allSatisfy { $0.hasPrefix("[+") && $0.contains(" ms] ") }, "every line is stamped")
    }

    @Test("RetryJob gives up after its last retry, says so, and exits with status 1")
    func givesUp() throws {
        let (lines, status) = try run(["--fail-first", "9", "--max-retries", "2"])
        #expect(status == 1)
        #expect(lines.last?.contains("gave up after 3 attempts") == true, "\(lines.joined(separator: "\n"))")
    }
}
