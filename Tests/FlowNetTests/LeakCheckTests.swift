import FlowNet
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("The socket leak checks")
struct LeakCheckTests {
    /// `/proc/net/tcp` lists every socket of the machine's network namespace; read with
    /// `String(contentsOfFile:)` it stopped after its first page (about 26 sockets), so a socket
    /// further down went unseen, and a failed-accept test found "no listening socket" when other
    /// tests had many open.
    @Test("a socket is found however many others are open")
    func aSocketIsFoundAmongMany() throws {
        var descriptors: [Int32] = []
        defer { for descriptor in descriptors { close(descriptor) } }
        for _ in 0..<200 {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(descriptor >= 0)
            descriptors.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(bound == 0 && listen(descriptor, 1) == 0)
        }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptors.last!, $0, &length) }
        }
        try #require(named == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let bound = try SocketAddress(host: "127.0.0.1", port: port)
        #expect(socketInodes(boundTo: bound, .tcp).count == 1)
        #expect(SocketsBound(at: bound, .tcp).openCount == 1)
    }
}
