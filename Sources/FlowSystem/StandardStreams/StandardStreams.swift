import CLibUV
import Flow
import FlowNet

/// The process's standard input, output and error as streams on the loop, so that a line-protocol
/// program reads and writes without blocking it: a terminal (`uv_tty_t`) or a pipe or socket
/// (`uv_pipe_t`), as libuv finds them.
///
/// ```swift
/// let input = try StandardStreams.input(on: .main)
/// let output = try StandardStreams.output(on: .main)
/// input.onRead { event in
///     if case .bytes(let bytes) = event { output.send(copying: bytes) } else { input.close(); output.close() }
/// }
/// try EventLoop.main.run()   // cat, on the loop
/// ```
///
/// libuv puts the descriptor in non-blocking mode, which other processes sharing it (a shell's
/// terminal) see too; close the stream before the program ends to hand it back as it was found.
public enum StandardStreams {
    /// Standard input (descriptor 0) as a stream to read. Callable from any thread.
    ///
    /// ```swift
    /// let input = try StandardStreams.input()
    /// ```
    ///
    /// - Throws: ``StandardStreamError/notAStream(descriptor:)`` when it is a regular file (read that
    ///   with ``FileSystem``), or libuv's error.
    public static func input(on loop: EventLoop = .main) throws -> StreamConnection {
        try open(descriptor: 0, on: loop)
    }

    /// Standard output (descriptor 1) as a stream to write. Callable from any thread.
    ///
    /// ```swift
    /// try StandardStreams.output().write("ready\n")
    /// ```
    public static func output(on loop: EventLoop = .main) throws -> StreamConnection {
        try open(descriptor: 1, on: loop)
    }

    /// Standard error (descriptor 2) as a stream to write. Callable from any thread.
    ///
    /// ```swift
    /// try StandardStreams.error().write("warning: cache cold\n")
    /// ```
    public static func error(on loop: EventLoop = .main) throws -> StreamConnection {
        try open(descriptor: 2, on: loop)
    }

    /// Any inherited descriptor as a stream, by what libuv finds it to be. The stream owns the
    /// descriptor from then on; when this throws, the descriptor stays the caller's. A regular file
    /// throws ``StandardStreamError/notAStream(descriptor:)``, and a datagram (UDP) socket
    /// `EPROTOTYPE: protocol wrong type for socket`. Callable from any thread (off the loop it waits
    /// for the loop).
    ///
    /// ```swift
    /// let extra = try StandardStreams.open(descriptor: 3)   // a pipe a parent passed as fd 3
    /// ```
    public static func open(descriptor: Int32, on loop: EventLoop = .main) throws -> StreamConnection {
        try loop.performAndWait("StandardStreams.open") { () throws -> StreamConnection in
            switch uv_guess_handle(descriptor) {
            case UV_TTY:
                let terminal = try TerminalConnection(descriptor: descriptor, on: loop)
                terminal.nameResource("terminal on descriptor \(descriptor)")
                return terminal
            case UV_NAMED_PIPE, UV_TCP, UV_UDP:
                return try PipeConnection.open(fileDescriptor: descriptor, on: loop)
            case UV_FILE:
                throw StandardStreamError.notAStream(descriptor: descriptor)
            default:
                throw EventLoop.error(UV_EBADF.rawValue)
            }
        }
    }

    /// Wraps an inherited descriptor like ``open(descriptor:on:)``, from async code: the task waits for
    /// the loop without blocking a thread. Named apart from the synchronous form, which async callers
    /// without `await` keep.
    ///
    /// ```swift
    /// let extra = try await StandardStreams.openAsync(descriptor: 3, on: loop)
    /// ```
    public nonisolated(nonsending) static func openAsync(descriptor: Int32, on loop: EventLoop = .main) async throws -> StreamConnection {
        try await loop.perform("StandardStreams.openAsync") { () throws -> StreamConnection in
            try open(descriptor: descriptor, on: loop)
        }
    }
}

/// Why ``StandardStreams`` could not make a stream.
public enum StandardStreamError: Error, Hashable, CustomStringConvertible {
    /// The descriptor is a regular file, which has no stream to watch: read it with ``FileSystem``.
    case notAStream(descriptor: Int32)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .notAStream(let descriptor):
            return "descriptor \(descriptor) is a regular file, not a stream: read it with FileSystem"
        }
    }
}
