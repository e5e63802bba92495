import Dispatch
import Flow
import FlowNet
import Foundation
import Testing

/// The echo server under load from several loopback clients for a bounded time: every byte comes
/// back in order, every connection closes, and memory returns to where a short warm-up left it.
@Suite("Soak: the echo server under load", .serialized)
struct SoakTests {
    /// Seconds of load: `FLOW_SOAK_SECONDS`, 10 by default.
    static let seconds: Double = ProcessInfo.processInfo.environment["FLOW_SOAK_SECONDS"].flatMap(Double.init) ?? 10

    @Test("four clients echo through the server for a bounded time; every byte returns and memory returns to its baseline")
    func echoServerSoak() async {
        // In a child process of its own, so that other tests running meanwhile do not move its memory.
        // The child exits 0 once it has finished and reports what went wrong on its standard output,
        // which the parent only sees when the child exits as expected.
        let result = await #expect(
            processExitsWith: .success, observing: [\.standardOutputContent, \.standardErrorContent]
        ) {
            SoakTests.soak()
            fflush(nil)
            exit(0)
        }
        guard let result else { return }  // it crashed: the failed expectation above says how it ended
        let output = String(decoding: result.standardOutputContent, as: UTF8.self)
        print(output, terminator: "")
        // What the child wrote to its standard error (a runtime or harness message), to tell why when
        // it did not get as far as its figures.
        let errors = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(output.contains("soak: "), "the soak printed no figures; its standard error: \(errors)")
        for line in output.split(separator: "\n") where line.hasPrefix("soak problem: ") {
            Issue.record("\(line.dropFirst("soak problem: ".count)) (the soak printed: \(output))")
        }
    }

    /// The soak itself: prints its figures, and a line starting "soak problem: " for each thing that
    /// went wrong.
    static func soak() {
        func problem(_ message: String) {
            print("soak problem: \(message)")
        }
        let serverLoop = EventLoop.startOnNewThread(name: "soak.server")
        let clientLoop = EventLoop.startOnNewThread(name: "soak.clients")
        guard let server = try? EchoServer(on: serverLoop) else {
            problem("could not listen")
            return
        }

        // A warm-up with the same load settles the allocator's pools and the loops' buffers.
        let warmUp = SoakTests.load(port: server.port, clients: 4, seconds: min(2, SoakTests.seconds), on: clientLoop)
        if !warmUp.allSatisfy(\.isComplete) { problem("the warm-up did not complete: \(warmUp)") }
        waitUntil("the server to close the warm-up connections") { server.openConnections.current == 0 }
        let baseline = trimmedResidentBytes()

        let runs = SoakTests.load(port: server.port, clients: 4, seconds: SoakTests.seconds, on: clientLoop)
        waitUntil("the server to close every connection") { server.openConnections.current == 0 }
        let after = trimmedResidentBytes()

        let echoed = runs.reduce(0) { $0 + $1.received }
        for (index, run) in runs.enumerated() {
            if !run.isComplete { problem("client \(index) did not finish: \(run)") }
            if run.received != run.sent { problem("client \(index) sent \(run.sent) bytes and got \(run.received) back") }
            if run.mismatches != 0 { problem("client \(index) got \(run.mismatches) wrong bytes") }
        }
        if server.openConnections.current != 0 { problem("\(server.openConnections.current) connections still open") }
        // Resident memory may move by a few pages, and by what the allocator's per-thread pools keep
        // (trimmed, but not to the byte); a leak of what was echoed would be tens of megabytes. Under
        // AddressSanitizer freed memory sits in its quarantine, and LeakSanitizer checks instead.
        let growth = after - baseline
        let isUnderAddressSanitizer = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] != nil
        if growth >= 8 << 20 && !isUnderAddressSanitizer { problem("resident memory grew by \(growth) bytes over the soak") }
        print("soak: \(SoakTests.seconds) s, 4 clients, \(server.acceptedConnections.current) connections, "
            + "\(echoed) bytes echoed, resident \(baseline) -> \(after) bytes (\(growth >= 0 ? "+" : "")\(growth))")
        server.close()
        clientLoop.shutdown()
        serverLoop.shutdown()
    }

    /// The process's resident memory once the allocator has given its free pages back to the system,
    /// so that what it merely keeps in its pools does not count.
    /// (glibc's `malloc_trim`, found at run time since Swift's Glibc module leaves `malloc.h` out.)
    static func trimmedResidentBytes() -> Int {
        typealias MallocTrim = @convention(c) (Int) -> Int32
        if let trim = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            _ = unsafeBitCast(trim, to: MallocTrim.self)(0)
        }
        return residentBytes()
    }

    /// What one client sent and got back.
    struct ClientRun: Sendable, CustomStringConvertible {
        var sent = 0
        var received = 0
        var mismatches = 0
        var isComplete = false
        var error: String?

        var description: String { "sent \(sent), received \(received), complete \(isComplete), error \(error ?? "none")" }
    }

    /// Runs `clients` clients against the echo server for `seconds`, each writing chunks of a known
    /// byte pattern and checking every byte that comes back; then each half-closes and reads the rest.
    static func load(port: Int, clients: Int, seconds: Double, on loop: EventLoop) -> [ClientRun] {
        let runs = Guarded([ClientRun](repeating: ClientRun(), count: clients))
        let finished = DispatchSemaphore(value: 0)
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
        for client in 0..<clients {
            TCPConnection.connect(host: "127.0.0.1", port: port, on: loop).onResult(on: loop.scheduler) { result in
                guard let connection = result.value else {
                    runs.withLock { $0[client].error = "\(result.error!)" }
                    finished.signal()
                    return
                }
                SoakClient(connection: connection, index: client, deadline: deadline, runs: runs) {
                    finished.signal()
                }.start()
            }
        }
        for _ in 0..<clients {
            _ = finished.wait(timeout: .now() + reliabilityHangGuard + .seconds(Int(seconds)))
        }
        return runs.current
    }
}

/// One soak client, on the client loop: keeps up to 256 KiB in flight, checks the echo byte by byte.
private final class SoakClient: @unchecked Sendable {
    // @unchecked Sendable: every `var` is used only on the client loop (the connection's callbacks).
    let connection: TCPConnection
    let index: Int
    let deadline: UInt64
    let runs: Guarded<[SoakTests.ClientRun]>
    let onFinish: @Sendable () -> Void
    var sent = 0
    var received = 0
    var mismatches = 0
    var isWriting = true
    var chunkNumber = 0

    init(connection: TCPConnection, index: Int, deadline: UInt64, runs: Guarded<[SoakTests.ClientRun]>,
         onFinish: @escaping @Sendable () -> Void) {
        self.connection = connection
        self.index = index
        self.deadline = deadline
        self.runs = runs
        self.onFinish = onFinish
    }

    /// The byte at `offset` of this client's stream.
    func expectedByte(at offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset &* 31 &+ offset >> 9 &+ index)
    }

    func start() {
        connection.onRead { [self] event in
            switch event {
            case .bytes(let bytes):
                for byte in bytes {
                    if byte != expectedByte(at: received) { mismatches += 1 }
                    received += 1
                }
                fill()
            case .endOfStream:
                finish(error: nil)
            case .failed(let error):
                finish(error: "\(error)")
            }
        }
        fill()
    }

    /// Writes chunks while less than 256 KiB is in flight and the deadline has not passed; after it,
    /// half-closes once.
    private func fill() {
        guard isWriting else { return }
        if DispatchTime.now().uptimeNanoseconds >= deadline {
            isWriting = false
            connection.shutdown()
            return
        }
        while sent - received < 256 * 1024 {
            chunkNumber += 1
            let size = 1 + (chunkNumber &* 7919) % (32 * 1024)
            let start = sent
            let chunk = SharedBytes((0..<size).map { expectedByte(at: start + $0) })
            connection.send(chunk)
            sent += size
        }
    }

    private func finish(error: String?) {
        let run = SoakTests.ClientRun(
            sent: sent, received: received, mismatches: mismatches, isComplete: error == nil && !isWriting, error: error)
        runs.withLock { $0[index] = run }
        connection.close().onValue(on: .none) { [onFinish] in onFinish() }
    }
}
