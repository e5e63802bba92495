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
        misusePrecondition(
            outputLimit >= 0, "ChildProcess.run: the output limit must not be negative, not \(outputLimit)")
        return Future(on: loop.scheduler) { completion in
            let child = try ChildProcess.spawn(
                executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
                standardInput: input == nil ? .ignore : .pipe, standardOutput: .pipe, standardError: .pipe, on: loop)
            let collector = OutputCollector(child: child, limit: outputLimit, completion: completion)
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
    private var failure: Error?
    private var isFinished = false

    init(child: ChildProcess, limit: Int, completion: @escaping @Sendable (Result<ProcessOutput>) -> Void) {
        self.child = child
        self.limit = limit
        self.completion = completion
    }

    func start() {
        collect(child.standardOutput!) { [self] bytes in output += bytes }
        collect(child.standardError!) { [self] bytes in error += bytes }
    }

    private func collect(_ stream: PipeConnection, into append: @escaping (UnsafeRawBufferPointer) -> Void) {
        stream.onRead { [self] event in
            switch event {
            case .bytes(let bytes):
                if output.count + error.count + bytes.count > limit {
                    if failure == nil {
                        failure = ChildProcessError.outputLimitExceeded(limit: limit)
                        child.kill(.kill)
                    }
                    stream.close()
                    streamEnded()
                } else {
                    append(bytes)
                }
            case .endOfStream:
                stream.close()
                streamEnded()
            case .failed(let readError):
                // The output is cut short: the caller is told, rather than handed the part read.
                if failure == nil { failure = readError }
                stream.close()
                streamEnded()
            }
        }
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
        child.kill(.kill)
    }
}
