import CFaultInjection
import Glibc

/// A kind of fault, and the calls it may hit.
enum FaultKind: String, CaseIterable {
    case eintr, eagain, short, enomem, enobufs, emfile, econnreset, eio, alloc

    /// Whether a run is expected to fail when one is injected: those are injected once per run, at
    /// the nth eligible call the seed picks; the others often, a fraction of the calls.
    var isFatal: Bool {
        switch self {
        case .eintr, .eagain, .short: false
        default: true
        }
    }

    /// The plan for a run with `seed`; `window`: how many eligible calls a clean run makes.
    func plan(seed: UInt64, window: UInt64) -> flow_fault_plan {
        var plan = flow_fault_plan()
        plan.seed = seed
        let streams = UInt32(flow_fault_calls_stream_io)
        let files = UInt32(flow_fault_calls_file_io)
        let datagrams = UInt32(flow_fault_calls_datagram)
        let accepts = UInt32(flow_fault_calls_accept)
        let connects = UInt32(flow_fault_calls_connect)
        let opens = UInt32(flow_fault_calls_open)
        let descriptors = UInt32(flow_fault_calls_descriptors)
        let renames = UInt32(flow_fault_calls_rename)
        let lookups = UInt32(flow_fault_calls_lookup)
        let spawns = UInt32(flow_fault_calls_spawn)
        plan.action = flow_fault_errno
        switch self {
        case .eintr:
            plan.errno_value = EINTR
            plan.calls = streams | files | datagrams | accepts | connects | opens | renames
        case .eagain:
            plan.errno_value = EAGAIN
            plan.calls = streams | datagrams | accepts | lookups
        case .short:
            plan.action = flow_fault_short
            plan.calls = streams | files
        case .enomem:
            plan.errno_value = ENOMEM
            plan.calls = streams | datagrams | accepts | descriptors | lookups | spawns
        case .enobufs:
            plan.errno_value = ENOBUFS
            plan.calls = streams | datagrams | accepts | descriptors
        case .emfile:
            plan.errno_value = EMFILE
            plan.calls = accepts | descriptors | opens
        case .econnreset:
            plan.errno_value = ECONNRESET
            plan.calls = streams
        case .eio:
            plan.errno_value = EIO
            plan.calls = files | renames
        case .alloc:
            plan.action = flow_fault_allocation
        }
        if isFatal {
            plan.nth = 1 + seed % max(window, 1)
            plan.limit = 1
        } else {
            plan.per_mille = 200
        }
        return plan
    }
}

/// The child of the process scenario: copies standard input to standard output, and exits 1 if the
/// input was not as long as its first 8 bytes say (so that input cut short shows in its status).
func copyInputToOutput() -> Int32 {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    var copied = 0
    while true {
        let count = read(0, &buffer, buffer.count)
        if count == 0 { break }
        if count < 0 {
            if errno == EINTR { continue }
            return 1
        }
        var written = 0
        while written < count {
            let result = buffer.withUnsafeBytes { write(1, $0.baseAddress! + written, count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                return 1
            }
            written += result
        }
        copied += count
    }
    return copied == childInputLength + 8 ? 0 : 1
}

/// How many bytes the process scenario writes to its child, after an 8-byte header saying so.
let childInputLength = 256 * 1024

/// The byte at `offset` of the stream a run with `seed` sends: a lost, duplicated or reordered byte
/// shows at the first offset where it differs.
@inline(__always)
func patternByte(seed: UInt64, offset: Int) -> UInt8 {
    var value = UInt64(truncatingIfNeeded: offset) &* 0x9E37_79B9_7F4A_7C15 &+ seed
    value ^= value >> 29
    return UInt8(truncatingIfNeeded: value)
}

func pattern(seed: UInt64, count: Int) -> [UInt8] {
    (0..<count).map { patternByte(seed: seed, offset: $0) }
}
