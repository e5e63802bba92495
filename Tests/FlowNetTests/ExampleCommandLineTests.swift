import Testing

/// The examples' command lines (swift-argument-parser): `--help` describes every option and exits 0
/// without starting the program; a bad value is a usage error, exit status 64 (EX_USAGE).
@Suite("Example command lines")
struct ExampleCommandLineTests {
    /// Everything `name --help` prints, and its exit status.
    func help(of name: String) throws -> (text: String, status: Int32) {
        let program = try ExampleProcess(name, arguments: ["--help"])
        var lines: [String] = []
        while let line = program.readLine() { lines.append(line) }
        return (lines.joined(separator: "\n"), program.waitForExit())
    }

    @Test(arguments: [
        ("EchoServer", ["--host", "--port", "--unix", "--drain-seconds", "--log-level"]),
        (
            "HTTPHello",
            [
                "--host", "--port", "--loops", "--request-timeout", "--idle-timeout", "--max-head", "--max-headers",
                "--max-body", "--max-connections", "--log-level",
            ]
        ),
        ("RetryJob", ["--fail-first", "--max-retries", "--log-level"]),
        ("Tour", []),
        ("Supervisor", ["--max-attempts", "--initial-delay", "--maximum-delay"]),
    ])
    func helpDescribesEveryOptionAndExitsZero(example: String, options: [String]) throws {
        let (text, status) = try help(of: example)
        #expect(status == 0)
        #expect(text.contains("OVERVIEW:"), "\(example) --help has no overview: \(text)")
        for option in options {
            #expect(text.contains(option), "\(example) --help does not describe \(option)")
        }
    }

    @Test(arguments: [
        ("EchoServer", ["--port", "70000"]),
        ("EchoServer", ["--port", "seven"]),
        ("HTTPHello", ["--loops", "0"]),
        ("HTTPHello", ["--request-timeout", "0"]),
        ("HTTPHello", ["--max-body", "-"]),
        ("RetryJob", ["--fail-first", "many"]),
        ("Tour", ["--bogus"]),
        ("Supervisor", ["--max-attempts", "0", "--", "/bin/true"]),
        ("Supervisor", []),
    ])
    func aBadValueIsAUsageErrorWithStatus64(example: String, arguments: [String]) throws {
        let program = try ExampleProcess(example, arguments: arguments)
        #expect(program.readLine() == nil, "\(example) \(arguments) started instead of refusing")
        #expect(program.waitForExit() == 64)
    }
}
