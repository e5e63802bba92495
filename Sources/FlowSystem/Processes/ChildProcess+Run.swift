import Flow
import FlowNet

/// What ``ChildProcess/run(_:arguments:environment:workingDirectory:input:outputLimit:on:)`` collected.
public struct ProcessOutput: Sendable, Hashable {
    /// How the process ended.
    public let termination: ChildProcess.Termination
    /// Everything it wrote to its standard output.
    public let standardOutput: [UInt8]
    /// Everything it wrote to its standard error.
    public let standardError: [UInt8]

    /// The standard output as UTF-8 text.
    public var outputText: String { String(decoding: standardOutput, as: UTF8.self) }
    /// The standard error as UTF-8 text.
    public var errorText: String { String(decoding: standardError, as: UTF8.self) }
}

/// Why ``ChildProcess/run(_:arguments:environment:workingDirectory:input:outputLimit:on:)`` gave up.
///
/// Its cases stay as they are, so that a `switch` over them written today keeps compiling: a new way for
/// `run` to fail gets an error type of its own, as the timeout's ``ChildProcessTimeoutError`` does.
public enum ChildProcessError: Error, Hashable, CustomStringConvertible {
    /// The process wrote more than the limit to its standard output and error together; it was killed.
    case outputLimitExceeded(limit: Int)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .outputLimitExceeded(let limit):
            return "the process wrote more than \(limit) bytes of output; it was killed"
        }
    }
}

/// The process was still running at the deadline of
/// ``ChildProcess/run(_:arguments:environment:workingDirectory:input:outputLimit:processGroup:timeout:killSignal:on:)``;
/// it (its process group, when it had one of its own) was sent the kill signal.
///
/// ```swift
/// ChildProcess.run("/usr/bin/make", timeout: 600).onError { error in
///     if let timeout = error as? ChildProcessTimeoutError { print("make took over \(timeout.seconds) s") }
/// }
/// ```
public struct ChildProcessTimeoutError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The time the process was given, in seconds.
    public let seconds: Double

    /// Creates the error for a process given `seconds` seconds.
    public init(seconds: Double) {
        self.seconds = seconds
    }

    /// "the process was still running after 1.0 s; it was killed".
    public var description: String { "the process was still running after \(seconds) s; it was killed" }
}

extension ChildProcess {
    /// Runs a command to its end and collects what it wrote. Callable from any thread.
    ///
    /// "Its end" is its exit and the end of its standard output and error: a process it started in the
    /// background that keeps them open (`sleep 60 &` in a shell script) keeps the future pending until
    /// that process closes them or exits too, as a shell's `$(...)` waits. Give such a process other
    /// output (`> /dev/null`), or use ``spawn(_:arguments:environment:workingDirectory:standardInput:standardOutput:standardError:on:)``
    /// and its ``ChildProcess/exit`` future.
    ///
    /// ```swift
    /// ChildProcess.run("uname", arguments: ["-s"]).onValue { output in
    ///     print(output.outputText)   // Linux
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executable: a path, or a name looked up in `PATH` as a shell would.
    ///   - arguments: the arguments after the program's name.
    ///   - environment: the command's whole environment; `nil` (the default) passes this process's.
    ///   - workingDirectory: the command's current directory; `nil` keeps this process's.
    ///   - input: bytes written to the command's standard input, which is then closed; with `nil` it
    ///     reads nothing (`/dev/null`).
    ///   - outputLimit: the most bytes kept from standard output and error together; a command writing
    ///     more is killed and the future fails with ``ChildProcessError/outputLimitExceeded(limit:)``.
    ///   - loop: the loop that runs the command and on which the future completes.
    /// - Returns: the output and how the command ended (a failing exit code is not an error here: see
    ///   ``Termination/isSuccess``). Fails with the spawn's error, such as `ENOENT: no such file or
    ///   directory`, or `EINVAL: invalid argument` for a string holding a NUL byte; with the error that
    ///   cut reading its output short, or writing its input (except `EPIPE` and `ECONNRESET`: the command
    ///   stopped reading it). Cancelling it kills the command. A negative `outputLimit` stops the program
    ///   with a message.
    public static func run(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, input: [UInt8]? = nil, outputLimit: Int = 16 * 1024 * 1024,
        on loop: EventLoop = .main
    ) -> Future<ProcessOutput> {
        run(
            executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
            input: input, outputLimit: outputLimit, processGroup: .inherit, timeout: nil, killSignal: .kill, on: loop)
    }

    /// Runs a command like ``run(_:arguments:environment:workingDirectory:input:outputLimit:on:)``, for
    /// at most `timeout` seconds: at the deadline the command's process group (by default a new one:
    /// the command and every process it started) is sent `killSignal`, its output is no longer read,
    /// and the future fails with ``ChildProcessTimeoutError`` once the command has exited.
    ///
    /// ```swift
    /// ChildProcess.run("/bin/sh", arguments: ["-c", "sleep 3; date"], timeout: 1).onError { error in
    ///     print(error)   // the process was still running after 1.0 s; it was killed (the sleep too)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - executable: a path, or a name looked up in `PATH` as a shell would.
    ///   - arguments: the arguments after the program's name.
    ///   - environment: the command's whole environment; `nil` (the default) passes this process's.
    ///   - workingDirectory: the command's current directory; `nil` keeps this process's.
    ///   - input: bytes written to the command's standard input, which is then closed; with `nil` it
    ///     reads nothing (`/dev/null`).
    ///   - outputLimit: the most bytes kept from standard output and error together; a command writing
    ///     more is killed (its group, when it leads one) and the future fails with
    ///     ``ChildProcessError/outputLimitExceeded(limit:)``.
    ///   - processGroup: ``ChildProcess/ProcessGroup/new`` (the default) makes the command lead a group
    ///     of its own, so that the deadline, the output limit and cancellation end all of it; with
    ///     ``ChildProcess/ProcessGroup/inherit`` only the command's first process is signalled, and one
    ///     it started can outlive it. See ``ChildProcess/ProcessGroup`` for why `spawn` keeps `inherit`.
    ///   - timeout: seconds the command may run, on the loop's clock; must be finite and not negative.
    ///   - killSignal: what the command is sent at the deadline (`SIGKILL` by default, which cannot be
    ///     caught); a command that catches a gentler signal and keeps running keeps the future pending.
    ///   - loop: the loop that runs the command and its deadline, and on which the future completes.
    /// - Returns: what the form without a timeout returns, or a failure with
    ///   ``ChildProcessTimeoutError`` at the deadline. Cancelling it kills the command (its
    ///   group, when it leads one). A negative `outputLimit`, or a `timeout` that is negative or not
    ///   finite, stops the program with a message.
    public static func run(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, input: [UInt8]? = nil, outputLimit: Int = 16 * 1024 * 1024,
        processGroup: ProcessGroup = .new, timeout: Double, killSignal: ProcessSignal = .kill,
        on loop: EventLoop = .main
    ) -> Future<ProcessOutput> {
        misusePrecondition(
            timeout.isFinite && timeout >= 0,
            "ChildProcess.run: the timeout must be a finite, non-negative number of seconds, not \(timeout)")
        return run(
            executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
            input: input, outputLimit: outputLimit, processGroup: processGroup, timeout: timeout as Double?,
            killSignal: killSignal, on: loop)
    }

    private static func run(
        _ executable: String, arguments: [String], environment: [String: String]?,
        workingDirectory: String?, input: [UInt8]?, outputLimit: Int,
        processGroup: ProcessGroup, timeout: Double?, killSignal: ProcessSignal,
        on loop: EventLoop
    ) -> Future<ProcessOutput> {
        misusePrecondition(
            outputLimit >= 0, "ChildProcess.run: the output limit must not be negative, not \(outputLimit)")
        return Future(on: loop.scheduler) { completion in
            let child = try ChildProcess.spawn(
                executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
                standardInput: input == nil ? .ignore : .pipe, standardOutput: .pipe, standardError: .pipe,
                processGroup: processGroup, on: loop)
            let collector = OutputCollector(child: child, limit: outputLimit, completion: completion)
            if let timeout {
                collector.deadline = loop.scheduler.async(after: timeout) { collector.timedOut(timeout, killSignal) }
            }
            if let input, let standardInput = child.standardInput {
                standardInput.write(input).onResult(on: .none) { written in
                    if case .failure(let error) = written { collector.inputFailed(error) }
                    standardInput.close()
                }
            }
            collector.start()
            return Disposer { loop.inContext { collector.cancel() } }
        }
    }
}

/// Reads a child's output and error to their ends, then reports with its termination.
private final class OutputCollector: @unchecked Sendable {
    // @unchecked Sendable: every `var` is used only on the child's loop (the read handlers, `start`,
    // and `cancel`, which the disposer runs there).
    private let child: ChildProcess
    private let limit: Int
    private let completion: @Sendable (Result<ProcessOutput>) -> Void
    private var output: [UInt8] = []
    private var error: [UInt8] = []
    private var openStreams = 2
    /// Whether standard output and standard error are still read.
    private var isReading = [true, true]
    /// The timer of `run`'s timeout, disposed once the run is finished.
    var deadline: Disposable?
    private var failure: Error?
    private var isFinished = false

    init(child: ChildProcess, limit: Int, completion: @escaping @Sendable (Result<ProcessOutput>) -> Void) {
        self.child = child
        self.limit = limit
        self.completion = completion
    }

    func start() {
        collect(0) { [self] bytes in output += bytes }
        collect(1) { [self] bytes in error += bytes }
    }

    /// Standard output (0) or standard error (1).
    private func stream(_ index: Int) -> PipeConnection {
        index == 0 ? child.standardOutput! : child.standardError!
    }

    private func collect(_ index: Int, into append: @escaping (UnsafeRawBufferPointer) -> Void) {
        stream(index).onRead { [self] event in
            switch event {
            case .bytes(let bytes):
                if output.count + error.count + bytes.count > limit {
                    if failure == nil {
                        failure = ChildProcessError.outputLimitExceeded(limit: limit)
                        kill(.kill)
                    }
                    stopReading(index)
                } else {
                    append(bytes)
                }
            case .endOfStream:
                stopReading(index)
            case .failed(let readError):
                // The output is cut short: the caller is told, rather than handed the part read.
                if failure == nil { failure = readError }
                stopReading(index)
            }
        }
    }

    private func stopReading(_ index: Int) {
        guard isReading[index] else { return }
        isReading[index] = false
        stream(index).close()
        streamEnded()
    }

    /// Signals the command: its whole group when it leads one, else its first process.
    private func kill(_ signal: ProcessSignal) {
        if child.processGroup == .new { child.killGroup(signal) } else { child.kill(signal) }
    }

    /// `run`'s deadline came: the command is killed and its output no longer read, so that a process
    /// that escaped the group and holds the pipes open cannot keep the run pending.
    func timedOut(_ seconds: Double, _ signal: ProcessSignal) {
        guard !isFinished else { return }
        if failure == nil { failure = ChildProcessTimeoutError(seconds: seconds) }
        kill(signal)
        stopReading(0)
        stopReading(1)
    }

    private func streamEnded() {
        openStreams -= 1
        guard openStreams == 0 else { return }
        child.exit.onValue(on: .none) { [self] termination in
            finish(termination)
        }
    }

    private func finish(_ termination: ChildProcess.Termination) {
        guard !isFinished else { return }
        isFinished = true
        deadline?.dispose()
        if let failure {
            completion(.failure(failure))
        } else {
            completion(.success(ProcessOutput(termination: termination, standardOutput: output, standardError: error)))
        }
    }

    /// Writing the input failed with `inputError`. A command that stops reading its input (it exits, or
    /// closes it: `EPIPE`, `ECONNRESET`) decides so itself; any other failure cut the input short
    /// without the command knowing, and fails the run.
    func inputFailed(_ inputError: Error) {
        if case .libuv(_, let name, _)? = inputError as? EventLoopError, name == "EPIPE" || name == "ECONNRESET" {
            return
        }
        if failure == nil { failure = inputError }
    }

    func cancel() {
        guard !isFinished else { return }
        deadline?.dispose()
        kill(.kill)
    }
}
