import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP port that nobody listens on and nobody else can take while this value lives: a socket
/// bound to it on every local address, never listening. A connection to it is refused
/// (`ECONNREFUSED`), and neither a parallel test's listener on port 0 nor a client's ephemeral
/// port can be given this number, which a port freed by closing a listener does not promise.
public final class ReservedPort: Sendable {
    /// The reserved port number.
    public let port: Int
    private let descriptor: Int32

    /// Reserves a free port, on IPv6's any address with IPv4 mapped (so it covers `127.0.0.1` and
    /// `::1`), or on IPv4's any address where IPv6 is unavailable. Stops with the error's text if
    /// neither can be bound.
    public init() {
        if let (descriptor, port) = Self.bindDualStack() ?? Self.bindIPv4() {
            self.descriptor = descriptor
            self.port = port
        } else {
            fatalError("ReservedPort: no socket could be bound to a free port: \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    private static func bindDualStack() -> (Int32, Int)? {
        let descriptor = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var off: Int32 = 0
        setsockopt(descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &off, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_any
        return bindAndReadPort(descriptor, &address) { UInt16(bigEndian: $0.sin6_port) }
    }

    private static func bindIPv4() -> (Int32, Int)? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = INADDR_ANY
        return bindAndReadPort(descriptor, &address) { UInt16(bigEndian: $0.sin_port) }
    }

    /// Binds `descriptor` to port 0 of `address` (no `SO_REUSEADDR`, so nobody can share it) and
    /// reads back the port the system chose; closes the descriptor and returns nil on failure.
    private static func bindAndReadPort<Address>(
        _ descriptor: Int32, _ address: inout Address, port: (Address) -> UInt16
    ) -> (Int32, Int)? {
        var length = socklen_t(MemoryLayout<Address>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            return nil
        }
        return (descriptor, Int(port(address)))
    }
}
