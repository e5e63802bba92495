import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// Host names to addresses and back, on libuv's thread pool (`uv_getaddrinfo`, `uv_getnameinfo`), so
/// that a slow DNS server never blocks the loop.
///
/// ```swift
/// NameResolver.resolve(host: "localhost", port: 8080, on: loop).onValue { addresses in
///     print(addresses)   // [[::1]:8080, 127.0.0.1:8080] where /etc/hosts gives localhost both
/// }
/// ```
///
/// Names are looked up the way the C library does it (`/etc/hosts`, then DNS, as `/etc/nsswitch.conf`
/// says), and the addresses come in the order it prefers (RFC 6724: IPv6 first where it is usable).
/// Every method may be called from any thread; the futures complete on the loop.
public enum NameResolver {
    /// Which address families a lookup returns.
    public enum Family: Sendable, Hashable {
        /// IPv6 and IPv4.
        case any
        /// IPv4 only.
        case ipv4
        /// IPv6 only.
        case ipv6

        var value: Int32 {
            switch self {
            case .any: AF_UNSPEC
            case .ipv4: AF_INET
            case .ipv6: AF_INET6
            }
        }
    }

    /// The addresses of `host`, each with `port`; numeric hosts (`127.0.0.1`, `::1`) come back as they
    /// are, without a lookup.
    ///
    /// ```swift
    /// NameResolver.resolve(host: "no-such-host.invalid", port: 80)
    ///     .onError { error in print(error) }   // EAI_NONAME: unknown node or service
    /// ```
    ///
    /// - Parameters:
    ///   - host: a host name or a numeric address.
    ///   - port: the port each address gets, 0...65535.
    ///   - family: IPv6 and IPv4 (the default), or one of them.
    ///   - loop: the loop the lookup reports to.
    /// - Returns: the addresses, at least one, without duplicates, in the resolver's order. Fails with
    ///   libuv's error (`EAI_NONAME: unknown node or service` for a name that does not exist), with
    ///   `EAI_CANCELED` if cancelled, or with `EINVAL: invalid argument` for a host holding a NUL byte.
    public static func resolve(
        host: String, port: Int, family: Family = .any, on loop: EventLoop = .main
    ) -> Future<[SocketAddress]> {
        guard (0...65535).contains(port) else { return Future(error: EventLoop.error(UV_EINVAL.rawValue)) }
        if let numeric = try? SocketAddress(host: host, port: port), family == .any || family.matches(numeric) {
            return Future([numeric])
        }
        return lookUp(host: host, service: String(port), family: family, on: loop)
    }

    /// The addresses of `host` for a service named in `/etc/services` (`"http"`) or a numeric port.
    ///
    /// ```swift
    /// NameResolver.resolve(host: "localhost", service: "http").onValue { print($0) }   // [127.0.0.1:80, ...]
    /// ```
    public static func resolve(
        host: String, service: String, family: Family = .any, on loop: EventLoop = .main
    ) -> Future<[SocketAddress]> {
        lookUp(host: host, service: service, family: family, on: loop)
    }

    /// The name of `address` and of its port's service, through the reverse lookup of the C library
    /// (`/etc/hosts`, then DNS). Without a name the host comes back numeric, as `getnameinfo` does it.
    ///
    /// ```swift
    /// let address = try SocketAddress(host: "127.0.0.1", port: 22)
    /// NameResolver.name(of: address).onValue { name in print(name.host, name.service) }   // localhost ssh
    /// ```
    public static func name(of address: SocketAddress, on loop: EventLoop = .main) -> Future<HostAndService> {
        let lookup = NameLookup()
        loop.inContext { lookup.start(address, on: loop) }
        return lookup.result.future(onCancel: { loop.inContext { lookup.cancel() } })
    }

    /// A host name and service name, as ``NameResolver/name(of:on:)`` finds them.
    public struct HostAndService: Sendable, Hashable {
        /// The host's name, or its numeric address when it has none.
        public let host: String
        /// The port's service name (`"http"`), or the port number when it has none.
        public let service: String
    }

    private static func lookUp(
        host: String, service: String, family: Family, on loop: EventLoop
    ) -> Future<[SocketAddress]> {
        // C would look up the name only up to a NUL byte: another name than the one given.
        guard host.isWholeCString, service.isWholeCString else {
            return Future(error: EventLoop.error(UV_EINVAL.rawValue))
        }
        let lookup = AddressLookup(host: host, service: service, family: family.value)
        loop.inContext { lookup.start(on: loop) }
        return lookup.result.future(onCancel: { loop.inContext { lookup.cancel() } })
    }

    /// Resolves `host` on the calling thread, blocking it: for start-up code such as
    /// ``TCPListener/listen(host:port:backlog:reusePort:on:onAccept:)``, which has no future to give.
    static func resolveNow(host: String, port: Int, on loop: EventLoop) throws(EventLoopError) -> [SocketAddress] {
        if let numeric = try? SocketAddress(host: host, port: port) { return [numeric] }
        guard (0...65535).contains(port), host.isWholeCString else { throw EventLoop.error(UV_EINVAL.rawValue) }
        var hints = AddressLookup.hints(family: AF_UNSPEC)
        var request = uv_getaddrinfo_t()
        // Without a callback libuv resolves on the calling thread and leaves the list in the request.
        let status = uv_getaddrinfo(loop.unsafeLoopPointer, &request, nil, host, String(port), &hints)
        guard status == 0 else { throw EventLoop.error(status) }
        defer { uv_freeaddrinfo(request.addrinfo) }
        let addresses = AddressLookup.addresses(in: request.addrinfo)
        guard !addresses.isEmpty else { throw EventLoop.error(UV_EAI_NODATA.rawValue) }
        return addresses
    }
}

extension NameResolver.Family {
    func matches(_ address: SocketAddress) -> Bool {
        switch self {
        case .any: true
        case .ipv4: !address.isIPv6
        case .ipv6: address.isIPv6
        }
    }
}
