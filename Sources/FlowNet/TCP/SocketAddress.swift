import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and a port, such as `127.0.0.1:7000` or `[::1]:7000`.
///
/// Hosts are numeric addresses; ``NameResolver`` turns names into addresses.
///
/// ```swift
/// let address = try SocketAddress(host: "::1", port: 8080)
/// print(address)   // [::1]:8080
/// ```
public struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The numeric host, without brackets: `127.0.0.1` or `::1`.
    public let host: String
    /// The port (TCP or UDP).
    public let port: Int
    /// Whether this is an IPv6 address.
    public let isIPv6: Bool

    /// Parses a numeric IPv4 or IPv6 host.
    ///
    /// - Throws: `EventLoopError.libuv(code:name:message:)` with `EINVAL` when `host` is not a
    ///   numeric address (or holds a NUL byte, where C would stop reading it) or `port` is outside
    ///   0...65535.
    public init(host: String, port: Int) throws(EventLoopError) {
        guard (0...65535).contains(port), host.isWholeCString else { throw EventLoop.error(UV_EINVAL.rawValue) }
        var storage = sockaddr_storage()
        if Self.parse(host, port: port, into: &storage) == nil {
            throw EventLoop.error(UV_EINVAL.rawValue)
        }
        self.init(storage: storage)!
    }

    /// Reads a socket address libuv filled in; `nil` for families other than IPv4 and IPv6.
    ///
    /// Every received datagram and accepted connection makes one, so the host's text is written into
    /// memory on the stack, and a host of up to 15 bytes (any IPv4 address) needs no allocation at all.
    init?(storage: sockaddr_storage) {
        var storage = storage
        let family = Int32(storage.ss_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        let (host, port) = withUnsafePointer(to: &storage) { pointer in
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { name -> (String, Int) in
                name.initialize(repeating: 0)
                if family == AF_INET {
                    return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                        uv_ip4_name(address, name.baseAddress, name.count)
                        return (String(cString: name.baseAddress!), Int(UInt16(bigEndian: address.pointee.sin_port)))
                    }
                }
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    uv_ip6_name(address, name.baseAddress, name.count)
                    return (String(cString: name.baseAddress!), Int(UInt16(bigEndian: address.pointee.sin6_port)))
                }
            }
        }
        self.host = host
        self.port = port
        isIPv6 = family == AF_INET6
    }

    /// `host:port`, with IPv6 hosts in brackets.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// The address as the `sockaddr` libuv takes; `body` must not keep the pointer.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>) -> R) -> R {
        var storage = sockaddr_storage()
        _ = Self.parse(host, port: port, into: &storage)
        return withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1, body)
        }
    }

    /// The address family (`AF_INET` or `AF_INET6`), for `uv_tcp_init_ex`.
    var family: Int32 { isIPv6 ? AF_INET6 : AF_INET }

    /// Fills `storage` from a numeric host; returns `nil` if the host is neither IPv4 nor IPv6.
    private static func parse(_ host: String, port: Int, into storage: inout sockaddr_storage) -> Void? {
        withUnsafeMutablePointer(to: &storage) { pointer -> Void? in
            let ipv4 = pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                uv_ip4_addr(host, Int32(port), $0)
            }
            if ipv4 == 0 { return () }
            let ipv6 = pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                uv_ip6_addr(host, Int32(port), $0)
            }
            if ipv6 == 0 { return () }
            return nil
        }
    }
}
