import Dispatch
import Flow
import FlowNet
import Foundation
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Repeats `step` on the loop until it returns false (each step returning a future to wait for).
func repeatOnLoop(_ step: @escaping @Sendable () -> Future<Bool>) {
    step().onValue { again in
        if again { repeatOnLoop(step) }
    }
}

/// Reads from `connection` with ``TCPConnection/read()`` until the end of the stream.
func readToEnd(_ connection: StreamConnection) -> Future<[UInt8]> {
    let received = LoopState<[UInt8]>([])
    return Future<[UInt8]> { completion in
        @Sendable func next() {
            connection.read().onResult { result in
                switch result {
                case .success(let chunk?):
                    received.value += chunk
                    next()
                case .success(nil):
                    completion(.success(received.value))
                case .failure(let error):
                    completion(.failure(error))
                }
            }
        }
        next()
        return NilDisposer()
    }
}

/// Whether this machine can bind a TCP socket to `::1`.
let hasIPv6Loopback: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
        }
    }
}()

/// A blocking IPv4 client on 127.0.0.1, written against the C socket API so that it checks servers
/// independently of FlowNet. Every receive gives up after ``hangGuardSeconds``.
final class LoopbackClient {
    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: hangGuardSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            // Closed by deinit, which runs for this instance too: closing here as well would close
            // the number again, maybe another test's socket by then.
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    func send(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Half-closes: the server reads the end of the stream.
    func shutdownWriting() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Receives until the server closes its side (or the timeout).
    func receiveToEnd() -> String {
        receive(until: { _ in false })
    }

    /// Receives until `isComplete` holds for what came so far, the server closes, or the timeout.
    func receive(until isComplete: (String) -> Bool) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !isComplete(String(decoding: received, as: UTF8.self)) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

/// The port printed right after `prefix`, as in `EchoServer listening on 127.0.0.1:7000` or
/// `HTTPHello listening on 127.0.0.1:8080 with 2 loops`.
func listeningPort(in line: String, after prefix: String) -> Int? {
    guard line.hasPrefix(prefix) else { return nil }
    return Int(line.dropFirst(prefix.count).prefix { $0.isNumber })
}
