import HTTPParsing

#if canImport(Glibc)
import Glibc
#endif

/// How long a connection may take and how much it may send, from the command line:
/// `--request-timeout 10`, `--idle-timeout 30` (seconds), `--max-head 16384`, `--max-headers 100`,
/// `--max-body 1048576`, `--max-connections N` (per loop).
struct HTTPSessionSettings: Sendable {
    /// A request (its head and body) must arrive within this many seconds of its first byte, and the
    /// first request within this many seconds of the connection: a client that sends half a head and
    /// stops is answered `408` and closed.
    var requestTimeout: Double = 10
    /// A keep-alive connection between requests, or one whose client does not read its answers, is
    /// closed after this many seconds.
    var idleTimeout: Double = 30
    /// What a request may hold.
    var limits = HTTPRequestLimits()
    /// How many connections one loop holds; a new one beyond that closes the least recently active.
    /// By default the descriptor limit, less a reserve, shared between the loops.
    var maximumConnectionsPerLoop: Int

    /// The settings the program was started with, read once.
    static let fromCommandLine = HTTPSessionSettings(arguments: CommandLine.arguments)

    /// Reads the options above from `arguments`; a bad value prints the usage and exits with 2.
    init(arguments: [String]) {
        func value(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            return arguments[index + 1]
        }
        func seconds(_ name: String, _ fallback: Double) -> Double {
            guard let text = value(name) else { return fallback }
            // At most a year: the deadline is kept in nanoseconds of a UInt64.
            guard let seconds = Double(text), seconds > 0, seconds <= 366 * 86_400 else {
                Self.usage("\(name) \(text)")
            }
            return seconds
        }
        func count(_ name: String, _ fallback: Int) -> Int {
            guard let text = value(name) else { return fallback }
            guard let count = Int(text), count > 0 else { Self.usage("\(name) \(text)") }
            return count
        }
        requestTimeout = seconds("--request-timeout", requestTimeout)
        idleTimeout = seconds("--idle-timeout", idleTimeout)
        let loopCount = max(1, Int(value("--loops") ?? "1") ?? 1)
        maximumConnectionsPerLoop = count("--max-connections", Self.defaultConnectionLimit(loops: loopCount))
        limits = HTTPRequestLimits(
            maximumHeadSize: count("--max-head", limits.maximumHeadSize),
            maximumHeaderCount: count("--max-headers", limits.maximumHeaderCount),
            maximumBodySize: count("--max-body", limits.maximumBodySize))
    }

    /// The soft descriptor limit, less 32 for the process's own (listeners, loops, standard streams),
    /// divided between the loops.
    private static func defaultConnectionLimit(loops: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int32.max) else {
            return 1 << 20
        }
        let descriptors = Int(clamping: limit.rlim_cur)
        return max(1, (descriptors - 32) / loops)
    }

    private static func usage(_ bad: String) -> Never {
        print("HTTPHello: bad option '\(bad)'; the timeouts are seconds above 0 (a year at most),")
        print("the limits counts above 0: [--request-timeout 10] [--idle-timeout 30] [--max-head 16384]")
        print("  [--max-headers 100] [--max-body 1048576]")
        print("  [--max-connections N] (per loop; by default the descriptor limit less 32, shared by the loops)")
        exit(2)
    }
}
