import CLibUV
import Flow
import FlowNet

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with libuv's `uv_spawn`: its standard streams as connections, its exit as
/// a future, and ``kill(_:)``.
///
/// ```swift
/// let child = try ChildProcess.spawn("ls", arguments: ["-l"], standardOutput: .pipe, on: .main)
/// child.standardOutput!.onRead { event in
///     if case .bytes(let bytes) = event { print(String(decoding: bytes, as: UTF8.self), terminator: "") }
///     else { child.standardOutput!.close() }
/// }
/// child.exit.onValue { termination in print("ls ended: \(termination)") }   // ls ended: exit code 0
/// ```
///
/// For a command whose output you want whole, ``run(_:arguments:environment:workingDirectory:input:outputLimit:on:)``
/// is shorter. The process handle is closed once the child has exited, and ``exit`` completes then; the
/// pipes asked for with ``StandardStream/pipe`` are yours to close.
///
/// libuv learns of a child's exit through `SIGCHLD`; spawning unblocks it on the loop's thread, which a
/// process started from a Dispatch thread would otherwise inherit blocked. libuv then collects only its
/// own children, by process id, so Foundation's `Process` works alongside; code that collects any
/// child (`waitpid(-1, ...)`, `SIGCHLD` ignored) would take the exit before libuv sees it, and ``exit``
/// would never complete.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: `handle` and `hasExited` are used only in the loop's context (`spawn` runs on
    // it, `kill` hops there); the rest is immutable.

    /// What a child's standard input, output or error is connected to.
    public enum StandardStream: Sendable, Hashable {
        /// The parent's own stream (the default).
        case inherit
        /// Nothing: `/dev/null`.
        case ignore
        /// A new pipe, readable (output, error) or writable (input) by the parent through a
        /// `PipeConnection`.
        case pipe
    }

    /// Which process group a child joins: the group it and the processes it starts are signalled as.
    ///
    /// ``inherit`` is the default of ``spawn(_:arguments:environment:workingDirectory:standardInput:standardOutput:standardError:on:)``
    /// and ``run(_:arguments:environment:workingDirectory:input:outputLimit:on:)``: the child stays in
    /// this program's group, so a terminal's Ctrl-C and job control reach it together with this
    /// program, as with a shell's or Foundation's children. ``new`` is the default of the `run` form
    /// with a timeout, which must be able to end everything the command started, not only its first
    /// process: a shell script's `sleep` outlives a killed shell unless the group is killed.
    public enum ProcessGroup: Sendable, Hashable {
        /// The child stays in this program's process group (and session).
        case inherit
        /// The child leads a new process group (and session, with no controlling terminal), whose id
        /// is its process identifier; what it starts joins that group, and ``ChildProcess/killGroup(_:)``
        /// signals all of it. Signals a terminal sends this program no longer reach the child.
        case new
    }

    /// How a child ended: its exit code, or the signal that ended it.
    public struct Termination: Sendable, Hashable, CustomStringConvertible {
        /// The exit code; 0 when a signal ended the process.
        public let exitCode: Int
        /// The signal that ended the process, if one did.
        public let signal: ProcessSignal?

        /// Whether the process exited by itself with code 0.
        public var isSuccess: Bool { exitCode == 0 && signal == nil }

        /// Makes a termination, for tests and examples.
        public init(exitCode: Int, signal: ProcessSignal?) {
            self.exitCode = exitCode
            self.signal = signal
        }

        /// `exit code 3` or `killed by SIGKILL`.
        public var description: String {
            signal.map { "killed by \($0)" } ?? "exit code \(exitCode)"
        }
    }

    /// The loop the child is watched from.
    public let loop: EventLoop
    /// The child's process identifier.
    public let processIdentifier: Int32
    /// The process group the child was spawned into; with ``ProcessGroup/new`` its id is
    /// ``processIdentifier``.
    public let processGroup: ProcessGroup
    /// The writing end of the child's standard input, when spawned with ``StandardStream/pipe``.
    public let standardInput: PipeConnection?
    /// The reading end of the child's standard output, when spawned with ``StandardStream/pipe``.
    public let standardOutput: PipeConnection?
    /// The reading end of the child's standard error, when spawned with ``StandardStream/pipe``.
    public let standardError: PipeConnection?
    /// Completes once the child has exited (and libuv has closed its handle), with its exit code or
    /// the signal that ended it.
    ///
    /// ```swift
    /// child.exit.onValue { termination in if !termination.isSuccess { print("failed: \(termination)") } }
    /// ```
    public let exit: Future<Termination>

    private let handle: UnsafeMutablePointer<uv_process_t>
    private let exited = PendingResult<Termination>()
    private var termination: Termination?

    private init(
        loop: EventLoop, handle: UnsafeMutablePointer<uv_process_t>, processGroup: ProcessGroup,
        pipes: (PipeConnection?, PipeConnection?, PipeConnection?)
    ) {
        self.loop = loop
        self.handle = handle
        self.processGroup = processGroup
        processIdentifier = handle.pointee.pid
        (standardInput, standardOutput, standardError) = pipes
        exit = exited.future()
    }

    /// Starts `executable` with `arguments`. Callable from any thread: off the loop the child is
    /// started on the loop and the caller waits for it (see `EventLoop.performAndWait(_:)`); from async
    /// code use ``spawnAsync(_:arguments:environment:workingDirectory:standardInput:standardOutput:standardError:on:)``,
    /// which never blocks.
    ///
    /// ```swift
    /// let child = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "echo hi"], standardOutput: .pipe)
    /// ```
    ///
    /// - Parameters:
    ///   - executable: a path, or a name looked up in `PATH` as a shell would.
    ///   - arguments: the arguments after the program's name.
    ///   - environment: the child's whole environment; `nil` (the default) passes this process's.
    ///   - workingDirectory: the child's current directory; `nil` keeps this process's.
    ///   - standardInput: what the child reads; ``StandardStream/pipe`` makes ``standardInput``.
    ///   - standardOutput: where the child writes; ``StandardStream/pipe`` makes ``standardOutput``.
    ///   - standardError: where the child's errors go; ``StandardStream/pipe`` makes ``standardError``.
    ///   - loop: the loop the child's handle and pipes live on.
    /// - Throws: libuv's error, such as `ENOENT: no such file or directory` for an executable or a
    ///   working directory that does not exist, `EACCES: permission denied` for a file that may not be
    ///   run; `EINVAL: invalid argument` for a string holding a NUL byte (which C would cut short there)
    ///   or an environment variable's name that is empty or holds `=`. Nothing is left open then.
    public static func spawn(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: StandardStream = .inherit,
        standardOutput: StandardStream = .inherit, standardError: StandardStream = .inherit,
        on loop: EventLoop = .main
    ) throws(EventLoopError) -> ChildProcess {
        try spawn(
            executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
            standardInput: standardInput, standardOutput: standardOutput, standardError: standardError,
            processGroup: .inherit, on: loop)
    }

    /// Starts `executable` like ``spawn(_:arguments:environment:workingDirectory:standardInput:standardOutput:standardError:on:)``,
    /// in the process group `processGroup`: with ``ProcessGroup/new`` the child leads a group of its own,
    /// which ``killGroup(_:)`` ends whole, with whatever the child started.
    ///
    /// ```swift
    /// let script = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "sleep 3; date"], processGroup: .new)
    /// script.killGroup(.kill)   // the shell and its sleep
    /// ```
    public static func spawn(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: StandardStream = .inherit,
        standardOutput: StandardStream = .inherit, standardError: StandardStream = .inherit,
        processGroup: ProcessGroup, on loop: EventLoop = .main
    ) throws(EventLoopError) -> ChildProcess {
        try loop.performAndWait("ChildProcess.spawn") { () throws(EventLoopError) in
            try spawnOnLoop(
                executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
                standardInput: standardInput, standardOutput: standardOutput, standardError: standardError,
                processGroup: processGroup, on: loop)
        }
    }

    /// Starts `executable` like ``spawn(_:arguments:environment:workingDirectory:standardInput:standardOutput:standardError:on:)``,
    /// from async code: the task waits for the loop without blocking a thread. Named apart from the
    /// synchronous form, which async callers without `await` keep.
    ///
    /// ```swift
    /// let child = try await ChildProcess.spawnAsync("/bin/true", on: loop)
    /// let termination = try await child.exit.get()
    /// ```
    public nonisolated(nonsending) static func spawnAsync(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: StandardStream = .inherit,
        standardOutput: StandardStream = .inherit, standardError: StandardStream = .inherit,
        on loop: EventLoop = .main
    ) async throws(EventLoopError) -> ChildProcess {
        try await spawnAsync(
            executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
            standardInput: standardInput, standardOutput: standardOutput, standardError: standardError,
            processGroup: .inherit, on: loop)
    }

    /// Starts `executable` in the process group `processGroup` like
    /// ``spawn(_:arguments:environment:workingDirectory:standardInput:standardOutput:standardError:processGroup:on:)``,
    /// from async code.
    ///
    /// ```swift
    /// let child = try await ChildProcess.spawnAsync("/bin/sh", arguments: ["-c", "sleep 1 & wait"], processGroup: .new)
    /// ```
    public nonisolated(nonsending) static func spawnAsync(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: StandardStream = .inherit,
        standardOutput: StandardStream = .inherit, standardError: StandardStream = .inherit,
        processGroup: ProcessGroup, on loop: EventLoop = .main
    ) async throws(EventLoopError) -> ChildProcess {
        try await loop.perform("ChildProcess.spawnAsync") { () throws(EventLoopError) in
            try spawnOnLoop(
                executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
                standardInput: standardInput, standardOutput: standardOutput, standardError: standardError,
                processGroup: processGroup, on: loop)
        }
    }

    private static func spawnOnLoop(
        _ executable: String, arguments: [String], environment: [String: String]?,
        workingDirectory: String?, standardInput: StandardStream,
        standardOutput: StandardStream, standardError: StandardStream,
        processGroup: ProcessGroup, on loop: EventLoop
    ) throws(EventLoopError) -> ChildProcess {
        // C would read each string up to a NUL byte and pass the rest on cut short, and would take an
        // environment variable's name to end at its first `=`: refused before anything is opened.
        let strings = [executable] + arguments + [workingDirectory].compactMap { $0 }
        let isEachVariableWhole = (environment ?? [:]).allSatisfy { name, value in
            !name.isEmpty && !name.contains("=") && name.isWholeCString && value.isWholeCString
        }
        guard strings.allSatisfy(\.isWholeCString), isEachVariableWhole else {
            throw EventLoop.error(UV_EINVAL.rawValue)
        }
        // libuv learns of the child's exit through SIGCHLD, delivered to the loop's thread.
        SignalMask.unblock(SIGCHLD)
        let streams = [standardInput, standardOutput, standardError]
        var pipes: [PipeConnection?] = []
        do {
            for stream in streams {
                pipes.append(stream == .pipe ? try PipeConnection(loop: loop) : nil)
            }
        } catch {
            for pipe in pipes { pipe?.close() }
            throw error
        }
        var stdio = (0..<3).map { index -> uv_stdio_container_t in
            var container = uv_stdio_container_t()
            switch streams[index] {
            case .inherit:
                container.flags = UV_INHERIT_FD
                container.data.fd = Int32(index)
            case .ignore:
                container.flags = UV_IGNORE
            case .pipe:
                // Readable and writable from the child's side.
                let direction = index == 0 ? UV_READABLE_PIPE.rawValue : UV_WRITABLE_PIPE.rawValue
                container.flags = uv_stdio_flags(UV_CREATE_PIPE.rawValue | direction)
                container.data.stream = pipes[index]!.handle
            }
            return container
        }
        let argv = CStringArray([executable] + arguments)
        let environ = environment.map { CStringArray($0.map { "\($0.key)=\($0.value)" }) }
        let handle = UnsafeMutablePointer<uv_process_t>.allocate(capacity: 1)
        let status = stdio.withUnsafeMutableBufferPointer { stdio in
            var options = uv_process_options_t()
            options.exit_cb = { handle, status, signal in
                Owner.borrow(handle?.pointee.data, as: ChildProcess.self).didExit(status: status, signal: signal)
            }
            options.stdio_count = 3
            // libuv's detached child calls setsid(): a new session and process group, led by the child.
            if processGroup == .new { options.flags = UV_PROCESS_DETACHED.rawValue }
            options.stdio = stdio.baseAddress
            return executable.withCString { file in
                options.file = file
                options.args = argv.pointer
                options.env = environ?.pointer
                if let workingDirectory {
                    return workingDirectory.withCString { directory in
                        options.cwd = directory
                        return uv_spawn(loop.unsafeLoopPointer, handle, &options)
                    }
                }
                return uv_spawn(loop.unsafeLoopPointer, handle, &options)
            }
        }
        // The strings must outlive the call (libuv copies nothing before the fork).
        withExtendedLifetime(argv) {}
        withExtendedLifetime(environ) {}
        guard status == 0 else {
            // libuv registered the handle even though the spawn failed: it must be closed.
            uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
                handle?.deallocate()
            }
            for pipe in pipes { pipe?.close() }
            loop.libuvStateDidChange()
            throw EventLoop.error(status)
        }
        let child = ChildProcess(
            loop: loop, handle: handle, processGroup: processGroup, pipes: (pipes[0], pipes[1], pipes[2]))
        handle.pointee.data = Owner.retain(child)
        loop.nameHandle(handle, kind: .childProcess, summary: "child process \(handle.pointee.pid) (\(executable))", creationSite: nil)
        for (pipe, stream) in zip(pipes, ["standard input", "standard output", "standard error"]) {
            pipe?.nameResource("\(stream) of child process \(handle.pointee.pid)")
        }
        loop.libuvStateDidChange()
        return child
    }

    private func didExit(status: Int64, signal: Int32) {
        termination = Termination(exitCode: Int(status), signal: signal == 0 ? nil : ProcessSignal(rawValue: signal))
        loop.forgetHandle(handle)
        uv_close(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_handle_t.self)) { handle in
            let child = Owner.release(handle?.pointee.data, as: ChildProcess.self)
            handle?.deallocate()
            child.exited.succeed(child.termination!)
        }
    }

    /// Sends `signal` to the child (`SIGTERM` by default). Fails with `ESRCH: no such process` once the
    /// child has exited. Callable from any thread.
    ///
    /// ```swift
    /// child.kill()                                                   // SIGTERM: please stop
    /// child.exit.timeout(after: 5).onError { _ in child.kill(.kill) } // then insist
    /// ```
    @discardableResult
    public func kill(_ signal: ProcessSignal = .terminate) -> Future<Void> {
        let sent = PendingResult<Void>()
        loop.inContext { [self] in
            guard termination == nil, !exited.isCompleted else {
                sent.fail(EventLoop.error(UV_ESRCH.rawValue))
                return
            }
            let status = uv_process_kill(handle, signal.rawValue)
            if status == 0 { sent.succeed(()) } else { sent.fail(EventLoop.error(status)) }
        }
        return sent.future()
    }

    /// Sends `signal` (`SIGTERM` by default) to every process of the group the child leads: the child
    /// and what it started, even once the child itself has exited. Fails with `ESRCH: no such process`
    /// once none is left. Callable from any thread.
    ///
    /// ```swift
    /// let script = try ChildProcess.spawn("/bin/sh", arguments: ["-c", "sleep 3; date"], processGroup: .new)
    /// script.killGroup(.kill)   // the shell and its sleep
    /// ```
    ///
    /// A child spawned without ``ProcessGroup/new`` leads no group of its own (its group is this
    /// program's): calling this then stops the program with a message.
    @discardableResult
    public func killGroup(_ signal: ProcessSignal = .terminate) -> Future<Void> {
        misusePrecondition(
            processGroup == .new,
            "ChildProcess.killGroup: \(self) was spawned without processGroup: .new and leads no group of its own; use kill(_:)"
        )
        // A group's id is not reused while any of its processes lives, so a negative id reaches only
        // this child's group. uv_kill is kill(2), safe from any thread.
        let status = uv_kill(-processIdentifier, signal.rawValue)
        return status == 0 ? Future(()) : Future(error: EventLoop.error(status))
    }
}

extension ChildProcess: CustomStringConvertible {
    /// `ChildProcess(<pid>)`.
    public var description: String { "ChildProcess(\(processIdentifier))" }
}

/// A NULL-terminated array of C strings, freed with the value: `argv` and `envp` for `uv_spawn`.
final class CStringArray {
    let pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
    private let count: Int

    init(_ strings: [String]) {
        count = strings.count
        pointer = .allocate(capacity: strings.count + 1)
        for (index, string) in strings.enumerated() { pointer[index] = strdup(string) }
        pointer[strings.count] = nil
    }

    deinit {
        for index in 0..<count { free(pointer[index]) }
        pointer.deallocate()
    }
}
