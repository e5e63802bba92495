import HTTPParsing

#if canImport(Glibc)
import Glibc
#endif

/// How long a connection may take and how much it may send, from the command line (see
/// ``HTTPHelloOptions``): `--request-timeout 10`, `--idle-timeout 30` (seconds), `--max-head 16384`,
/// `--max-headers 100`, `--max-body 1048576`, `--max-connections N` (per loop).
struct HTTPSessionSettings: Sendable {
    /// A request (its head and body) must arrive within this many seconds of its first byte, and the
    /// first request within this many seconds of the connection: a client that sends half a head and
    /// stops is answered `408` and closed.
    var requestTimeout: Double = 10
    /// A connection that reads and writes no byte for this many seconds (a keep-alive connection
    /// between requests, one whose client does not read its answers) is closed: its idle timeout.
    var idleTimeout: Double = 30
    /// What a request may hold.
    var limits = HTTPRequestLimits()
    /// How many connections one loop holds; a new one beyond that closes the least recently active.
    /// By default the descriptor limit, less a reserve, shared between the loops.
    var maximumConnectionsPerLoop: Int

    /// The settings the program was started with, read once.
    static let fromCommandLine = HTTPSessionSettings(options: HTTPHelloOptions.parsed)

    /// The settings `options` give (already checked by their `validate()`).
    init(options: HTTPHelloOptions) {
        requestTimeout = options.requestTimeout
        idleTimeout = options.idleTimeout
        maximumConnectionsPerLoop = options.maxConnections ?? Self.defaultConnectionLimit(loops: options.loops)
        limits = HTTPRequestLimits(
            maximumHeadSize: options.maxHead, maximumHeaderCount: options.maxHeaders, maximumBodySize: options.maxBody)
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
}
