import ArgumentParser

/// Supervisor's command line: `swift run Supervisor --help` lists it. A bad value is a usage error
/// (exit status 64) that names the option.
struct SupervisorOptions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "Supervisor",
        abstract: "Runs a command, and runs it again with exponential backoff when it fails.",
        discussion: "SIGTERM and Ctrl-C are passed on to the command; the supervisor stops once it has ended.")

    @Option(help: "How many times the command is run at most.")
    var maxAttempts = 5

    @Option(help: "Seconds to wait before the first retry.")
    var initialDelay = 0.5

    @Option(help: "The longest wait between two attempts, in seconds.")
    var maximumDelay = 30.0

    @Argument(parsing: .postTerminator, help: "The command and its arguments, after --.")
    var command: [String] = []

    func validate() throws {
        guard maxAttempts >= 1 else { throw ValidationError("--max-attempts must be at least 1, not \(maxAttempts).") }
        guard initialDelay >= 0, initialDelay.isFinite, maximumDelay >= 0, maximumDelay.isFinite else {
            throw ValidationError("--initial-delay and --maximum-delay must be zero or positive numbers of seconds.")
        }
        guard !command.isEmpty else { throw ValidationError("Give the command to run after --.") }
    }
}
