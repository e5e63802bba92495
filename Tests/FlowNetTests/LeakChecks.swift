import FlowNet
import Foundation
import Testing

/// TCP or UDP. Their port numbers are separate, and so, for binding, are IPv4's and IPv6's: while a
/// test's TCP socket holds `127.0.0.1:P`, a parallel test's UDP socket, or its TCP socket on `[::1]`,
/// can be bound to P too (a TCP test once counted such a socket as its own, left open).
enum Transport {
    case tcp, udp
}

/// The inodes of the `transport` sockets bound to `address`'s port in its family (`/proc/net/tcp`,
/// `tcp6`, `udp` or `udp6`).
func socketInodes(boundTo address: SocketAddress, _ transport: Transport) -> Set<String> {
    let table = (transport == .tcp ? "tcp" : "udp") + (address.isIPv6 ? "6" : "")
    let hexPort = String(format: "%04X", address.port)
    guard let text = procFileContents("/proc/net/\(table)") else { return [] }
    var inodes: Set<String> = []
    for line in text.split(separator: "\n").dropFirst() {
        let fields = line.split(separator: " ")
        guard fields.count > 9, fields[1].hasSuffix(":\(hexPort)") else { continue }
        inodes.insert(String(fields[9]))
    }
    return inodes
}

/// This process's `transport` sockets bound to `address`'s port in its family, noted so that a test
/// can check later that each was closed. Note them while the port is still held (before closing the listener or socket that holds
/// it): until then nobody else can bind the port, so every socket noted is the test's own, the
/// accepted connections included. A count by port after the close could see a parallel test's
/// socket, bound to the port once it was free: a test once found 1 where its own were all closed.
struct SocketsBound {
    /// The inodes (the `N` of `socket:[N]`) of the sockets noted.
    let inodes: Set<String>

    init(at address: SocketAddress, _ transport: Transport) {
        let bound = socketInodes(boundTo: address, transport)
        inodes = Set(openSocketInodes().filter(bound.contains))
    }

    /// How many of the sockets noted this process still has open.
    var openCount: Int { openSocketInodes().filter(inodes.contains).count }

    /// Expects that a socket was noted, and that none of them is still open.
    func expectAllClosed(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!inodes.isEmpty, "no socket was bound to the port when they were noted", sourceLocation: sourceLocation)
        #expect(openCount == 0, "sockets left open", sourceLocation: sourceLocation)
    }
}

/// The inodes of this process's open sockets, one per descriptor.
func openSocketInodes() -> [String] {
    openDescriptorTargets().filter { $0.hasPrefix("socket:[") }.map { String($0.dropFirst(8).dropLast()) }
}

/// The whole text of a /proc file, read until the end. Foundation's `String(contentsOfFile:)` stops
/// after the first page of a /proc file, which reports its size as 0: with more than about 26 TCP
/// sockets open on the machine (parallel tests open many), a socket's line in /proc/net/tcp was
/// beyond what it read, and the checks above saw no socket where there was one.
func procFileContents(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EINTR { continue }
            return nil
        }
        if count == 0 { break }
        bytes.append(contentsOf: chunk[0..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}
