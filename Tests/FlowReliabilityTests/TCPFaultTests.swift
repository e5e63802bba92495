import Dispatch
import Flow
import FlowNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Faults on the TCP layer, on loopback only: each ends in a clear error for the one connection it
/// hits, and the server goes on serving the others.
@Suite("Faults: TCP", .serialized)
struct TCPFaultTests {
    @Test("connecting to a port nobody listens on fails with ECONNREFUSED")
    func connectionRefused() throws {
        let loop = EventLoop.startOnNewThread(name: "faults.refused")
        defer { loop.shutdown() }
        // A port that was just free: listen on port 0, note the port, stop listening.
        let server = try EchoServer(on: loop)
        let port = server.port
        server.close()
        let attempt = wait(for: TCPConnection.connect(host: "127.0.0.1", port: port, on: loop), "the refused connect")
        let error = try #require(attempt?.error as? EventLoopError)
        #expect(error.description.hasPrefix("ECONNREFUSED"), "got \(error)")
    }

    @Test("a peer that resets the connection mid-write fails the pending write with ECONNRESET or EPIPE")
    func peerResetMidWrite() throws {
        let loop = EventLoop.startOnNewThread(name: "faults.reset")
        defer { loop.shutdown() }
        let peer = try RawListener()
        // The peer accepts, then closes with SO_LINGER 0: the kernel answers with a reset.
        let resetNow = DispatchSemaphore(value: 0)
        let peerDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            peer.acceptAndReset(after: resetNow)
            peerDone.signal()
        }
        let connected = wait(for: TCPConnection.connect(host: "127.0.0.1", port: peer.port, on: loop), "the connect")
        resetNow.signal()
        let connection = try #require(connected?.value)
        #expect(peerDone.wait(timeout: .now() + reliabilityHangGuard) == .success)
        // Writes go out until the reset reaches this side; a bounded number of them.
        let chunk = SharedBytes([UInt8](repeating: 0x5A, count: 64 * 1024))
        var failure: Error?
        for _ in 0..<2_000 {
            if let error = wait(for: connection.write(chunk), "a write")?.error {
                failure = error
                break
            }
        }
        let error = try #require(failure as? EventLoopError, "every write succeeded after the peer reset")
        #expect(["ECONNRESET", "EPIPE"].contains { error.description.hasPrefix($0) }, "got \(error)")
        _ = wait(for: connection.close(), "the close")
        peer.close()
    }

    @Test("writing or reading after close fails with ECANCELED; closing twice is harmless")
    func writingAfterClose() throws {
        let loop = EventLoop.startOnNewThread(name: "faults.afterClose")
        defer { loop.shutdown() }
        let server = try EchoServer(on: loop)
        defer { server.close() }
        let connection = try #require(
            wait(for: TCPConnection.connect(host: "127.0.0.1", port: server.port, on: loop), "the connect")?.value)
        #expect(wait(for: connection.close(), "the first close")?.value != nil)
        #expect(wait(for: connection.close(), "the second close")?.value != nil)
        let written = wait(for: connection.write("too late"), "the write after close")
        #expect((written?.error as? EventLoopError)?.description.hasPrefix("ECANCELED") == true, "got \(String(describing: written))")
        let read = wait(for: connection.read(), "the read after close")
        #expect((read?.error as? EventLoopError)?.description.hasPrefix("ECANCELED") == true, "got \(String(describing: read))")
        // The server is unaffected.
        #expect(echoRoundTrip("still here", port: server.port, on: loop)?.value == "still here")
    }

    @Test("running out of file descriptors on accept fails that one connection; the server keeps serving the others")
    func fileDescriptorExhaustionOnAccept() async {
        // In a child process: it lowers its own RLIMIT_NOFILE and fills the descriptor table.
        let result = await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
            let status = TCPFaultTests.exhaustDescriptorsWhileServing()
            fflush(nil)
            exit(status)
        }
        let output = String(decoding: result?.standardOutputContent ?? [], as: UTF8.self)
        #expect(!output.contains("fd exhaustion:"), "\(output)")
    }

    /// The child process of ``fileDescriptorExhaustionOnAccept()``; returns its exit status (0: as
    /// expected) after printing what went wrong otherwise.
    static func exhaustDescriptorsWhileServing() -> Int32 {
        // The exit status names the step that went wrong: descriptors may be too scarce to print.
        func fail(_ step: Int32, _ message: String) -> Int32 {
            print("fd exhaustion: \(message)")
            return step
        }
        let loop = EventLoop.startOnNewThread(name: "faults.emfile")
        guard let server = try? EchoServer(on: loop) else { return fail(11, "could not listen") }
        // A client connected and served before the exhaustion.
        let early = RawClient(port: server.port)
        guard early.echo("before") == "before" else { return fail(12, "no echo before the exhaustion") }

        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = 256
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return fail(13, "setrlimit failed") }
        let starved = RawClient()
        var fillers: [Int32] = []
        while true {
            let descriptor = dup(0)
            if descriptor < 0 { break }
            fillers.append(descriptor)
        }
        // The new client's socket was made before: connecting it needs no descriptor, and the server
        // has none left to accept it with.
        starved.connect(port: server.port)
        // The server's accept fails (libuv then closes the pending connection): the client reads
        // the end of the stream or a reset, never an echo.
        let starvedReply = starved.echo("starved")
        guard starvedReply == nil || starvedReply == "" else { return fail(14, "the starved client got \(starvedReply!)") }
        // libuv answers EMFILE with its reserve-descriptor trick: it closes its spare descriptor,
        // accepts and closes the pending connections, and reopens the spare, without reporting them to
        // the listener; so `failedAcceptCount` need not count this one.
        // Meanwhile the connection accepted earlier still works.
        guard early.echo("during") == "during" else { return fail(16, "the early client stopped being served") }
        starved.close()

        for descriptor in fillers { close(descriptor) }
        // With descriptors back, new clients are served again.
        let late = RawClient(port: server.port)
        guard late.echo("after") == "after" else { return fail(17, "no echo after descriptors came back") }
        late.close()
        early.close()
        server.close()
        loop.shutdown()
        return 0
    }
}

/// A blocking loopback client on a plain socket: it costs one descriptor and no loop.
final class RawClient {
    let descriptor: Int32

    convenience init(port: Int) {
        self.init()
        connect(port: port)
    }

    /// A socket not connected yet.
    init() {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    }

    func connect(port: Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// Sends `text` and reads as many bytes back; `""` if the server closed, `nil` on an error.
    func echo(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { return nil }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while received.count < bytes.count {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return String(decoding: received, as: UTF8.self) }
            if count < 0 { return nil }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    func close() { _ = Glibc.close(descriptor) }
}

/// A blocking loopback listener on a plain socket, for a peer that misbehaves.
final class RawListener: @unchecked Sendable {
    // @unchecked Sendable: `descriptor` and `port` are immutable; the accepting thread is the only
    // other user, ordered by the semaphore the test waits on.
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress -> Bool in
                bind(descriptor, socketAddress, length) == 0 && listen(descriptor, 4) == 0
                    && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            port = 0
            throw StressError(code: Int(errno))
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Accepts one connection and, once `signal` says so, closes it with a reset.
    func acceptAndReset(after signal: DispatchSemaphore) {
        let accepted = accept(descriptor, nil, nil)
        _ = signal.wait(timeout: .now() + reliabilityHangGuard)
        guard accepted >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(accepted, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        Glibc.close(accepted)
    }

    func close() { _ = Glibc.close(descriptor) }
}
