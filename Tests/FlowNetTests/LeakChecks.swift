import Foundation

/// The inodes of the sockets bound to local `port` (TCP and UDP, IPv4 and IPv6), from `/proc/net`.
func socketInodes(boundToPort port: Int) -> Set<String> {
    let hexPort = String(format: "%04X", port)
    var inodes: Set<String> = []
    for table in ["tcp", "tcp6", "udp", "udp6"] {
        guard let text = try? String(contentsOfFile: "/proc/net/\(table)", encoding: .utf8) else { continue }
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
