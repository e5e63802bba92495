#if canImport(Glibc)
import Glibc
#endif

/// An operating-system signal, such as `SIGTERM`, by its number.
///
/// ```swift
/// SignalWatcher.first(of: [.terminate, .interrupt]).onValue { signal in print("got \(signal)") }   // got SIGTERM
/// ```
public struct ProcessSignal: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The signal's number (`SIGTERM` is 15 on Linux).
    public let rawValue: Int32

    /// The signal with number `rawValue`.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `SIGINT`: Ctrl-C in a terminal.
    public static let interrupt = ProcessSignal(rawValue: SIGINT)
    /// `SIGTERM`: the polite request to stop (`kill`, `docker stop`, systemd).
    public static let terminate = ProcessSignal(rawValue: SIGTERM)
    /// `SIGHUP`: the terminal went away; daemons often reload their configuration on it.
    public static let hangUp = ProcessSignal(rawValue: SIGHUP)
    /// `SIGQUIT`: Ctrl-\ in a terminal.
    public static let quit = ProcessSignal(rawValue: SIGQUIT)
    /// `SIGUSR1`, for the program's own use.
    public static let user1 = ProcessSignal(rawValue: SIGUSR1)
    /// `SIGUSR2`, for the program's own use.
    public static let user2 = ProcessSignal(rawValue: SIGUSR2)
    /// `SIGKILL`: ends a process at once; it cannot be watched, only sent (``ChildProcess/kill(_:)``).
    public static let kill = ProcessSignal(rawValue: SIGKILL)
    /// `SIGWINCH`: the terminal's size changed.
    public static let windowSizeChanged = ProcessSignal(rawValue: SIGWINCH)

    /// The signal's C name, `SIGTERM`, or `signal 40` for one without a name here.
    public var description: String {
        switch rawValue {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        case SIGHUP: "SIGHUP"
        case SIGQUIT: "SIGQUIT"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        case SIGKILL: "SIGKILL"
        case SIGWINCH: "SIGWINCH"
        case SIGPIPE: "SIGPIPE"
        case SIGCHLD: "SIGCHLD"
        case SIGALRM: "SIGALRM"
        case SIGABRT: "SIGABRT"
        case SIGSEGV: "SIGSEGV"
        default: "signal \(rawValue)"
        }
    }
}
