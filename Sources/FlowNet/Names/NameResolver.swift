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
    /// A numeric service above 65535 fails with `EINVAL: invalid argument`, as a port would.
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
        lookup.startWhenSlotFree(on: loop) { lookup.start(address, on: loop) }
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
        guard host.isWholeCString, service.isWholeCString, !isOutOfRangePort(service) else {
            return Future(error: EventLoop.error(UV_EINVAL.rawValue))
        }
        let lookup = AddressLookup(host: host, service: service, family: family.value)
        lookup.startWhenSlotFree(on: loop) { lookup.start(on: loop) }
        return lookup.result.future(onCancel: { loop.inContext { lookup.cancel() } })
    }

    /// Resolves `host` on the calling thread, blocking it: for the synchronous entry points such as
    /// ``TCPListener/listen(host:port:backlog:reusePort:on:file:line:onAccept:)``, which have no future to give.
    /// Called off the loop it blocks only the caller's thread (the C library's `getaddrinfo`, which
    /// touches no loop state); in the loop's context it blocks the loop, which the `async` forms avoid.
    static func resolveNow(host: String, port: Int, on loop: EventLoop) throws(EventLoopError) -> [SocketAddress] {
        if let numeric = try? SocketAddress(host: host, port: port) { return [numeric] }
        guard (0...65535).contains(port), host.isWholeCString else { throw EventLoop.error(UV_EINVAL.rawValue) }
        var hints = AddressLookup.hints(family: AF_UNSPEC)
        let addresses: [SocketAddress]
        if loop.isInLoopContext {
            var request = uv_getaddrinfo_t()
            // Without a callback libuv resolves on the calling thread and leaves the list in the request.
            let status = uv_getaddrinfo(loop.unsafeLoopPointer, &request, nil, host, String(port), &hints)
            guard status == 0 else { throw EventLoop.error(status) }
            defer { uv_freeaddrinfo(request.addrinfo) }
            addresses = AddressLookup.addresses(in: request.addrinfo)
        } else {
            // `uv_getaddrinfo` counts its request in the loop's state, which only the loop may touch.
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, String(port), &hints, &list)
            guard status == 0 else { throw EventLoop.error(libuvStatus(ofLookupFailure: status)) }
            defer { freeaddrinfo(list) }
            addresses = AddressLookup.addresses(in: list)
        }
        guard !addresses.isEmpty else { throw EventLoop.error(UV_EAI_NODATA.rawValue) }
        return addresses
    }

    /// The addresses of `host` with `port`, looked up on libuv's thread pool: for the `async` entry
    /// points, whose loop never waits for a lookup.
    nonisolated(nonsending) static func resolveWithoutBlocking(host: String, port: Int, on loop: EventLoop) async throws(EventLoopError) -> [SocketAddress] {
        if let numeric = try? SocketAddress(host: host, port: port) { return [numeric] }
        return try await resolve(host: host, port: port, on: loop).valueOrEventLoopError()
    }

    /// libuv's code for a `getaddrinfo` failure, as `uv_getaddrinfo` reports it.
    private static func libuvStatus(ofLookupFailure status: Int32) -> Int32 {
        switch status {
        case EAI_AGAIN: UV_EAI_AGAIN.rawValue
        case EAI_BADFLAGS: UV_EAI_BADFLAGS.rawValue
        case EAI_FAIL: UV_EAI_FAIL.rawValue
        case EAI_FAMILY: UV_EAI_FAMILY.rawValue
        case EAI_MEMORY: UV_EAI_MEMORY.rawValue
        case EAI_NONAME: UV_EAI_NONAME.rawValue
        case EAI_OVERFLOW: UV_EAI_OVERFLOW.rawValue
        case EAI_SERVICE: UV_EAI_SERVICE.rawValue
        case EAI_SOCKTYPE: UV_EAI_SOCKTYPE.rawValue
        case EAI_SYSTEM: -errno
        // glibc's EAI_NODATA and EAI_ADDRFAMILY (a name without addresses of the family asked for).
        case -5: UV_EAI_NODATA.rawValue
        case -9: UV_EAI_ADDRFAMILY.rawValue
        default: UV_EAI_FAIL.rawValue
        }
    }

    /// Whether `service` is a port number outside 0...65535, which `getaddrinfo` would take modulo
    /// 65,536 (`"99999"` as port 34463): refused with `EINVAL`, as ``resolve(host:port:family:on:)``
    /// refuses such a port.
    static func isOutOfRangePort(_ service: String) -> Bool {
        guard !service.isEmpty, service.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return false
        }
        guard let port = Int(service) else { return true }   // more digits than an Int holds
        return port > 65535
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
