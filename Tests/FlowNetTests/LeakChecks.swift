import Foundation

/// The inodes of the sockets bound to local `port` (TCP and UDP, IPv4 and IPv6), from `/proc/net`.
func socketInodes(boundToPort port: Int) -> Set<String> {
    let hexPort = String(format: "%04X", port)
    var inodes: Set<String> = []
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        guard let text = procFileContents("/proc/net/\(table)") else { continue }
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, fields[1].hasSuffix(":\(hexPort)") else { continue }
            inodes.insert(String(fields[9]))
        }
    }
    return inodes
}

/// How many descriptors of this process refer to a socket bound to local `port`. Parallel tests use
/// other ports, so the count is about this test's sockets only.
func openSocketCount(boundToPort port: Int) -> Int {
    let inodes = socketInodes(boundToPort: port)
    return openDescriptorTargets().filter { target in
        target.hasPrefix("socket:[") && inodes.contains(String(target.dropFirst(8).dropLast()))
    }.count
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
