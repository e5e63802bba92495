import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// One `uv_getaddrinfo` request: owned by libuv (through `data`) from submission to its callback.
final class AddressLookup: @unchecked Sendable {
    // @unchecked Sendable: `request` and `isSubmitted` are used only on the loop (`start` and `cancel` run
    // there); `result` is Sendable.
    let result = PendingResult<[SocketAddress]>()
    private let host: String
    private let service: String
    private let family: Int32
    private let request = UnsafeMutablePointer<uv_getaddrinfo_t>.allocate(capacity: 1)
    private var isSubmitted = false

    init(host: String, service: String, family: Int32) {
        self.host = host
        self.service = service
        self.family = family
    }

    deinit {
        request.deallocate()
    }

    /// Stream sockets only: one entry per address instead of one per socket type.
    static func hints(family: Int32) -> addrinfo {
        var hints = addrinfo()
        hints.ai_family = family
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        return hints
    }

    func start(on loop: EventLoop) {
        guard !result.isCompleted else { return }   // cancelled before the loop got to it
        var hints = Self.hints(family: family)
        request.pointee.data = Owner.retain(self)
        let status = uv_getaddrinfo(loop.unsafeLoopPointer, request, { request, status, list in
            let lookup = Owner.release(request?.pointee.data, as: AddressLookup.self)
            lookup.isSubmitted = false
            defer { uv_freeaddrinfo(list) }
            if status != 0 {
                lookup.result.fail(EventLoop.error(status))
            } else {
                let addresses = AddressLookup.addresses(in: list)
                if addresses.isEmpty {
                    lookup.result.fail(EventLoop.error(UV_EAI_NODATA.rawValue))
                } else {
                    lookup.result.succeed(addresses)
                }
            }
        }, host, service, &hints)
        guard status == 0 else {
            _ = Owner.release(request.pointee.data, as: AddressLookup.self)
            result.fail(EventLoop.error(status))
            return
        }
        isSubmitted = true
        loop.libuvStateDidChange()
    }

    /// Cancels a lookup that has not started on the thread pool; one already running finishes, and
    /// its answer is dropped.
    func cancel() {
        result.fail(EventLoop.error(UV_EAI_CANCELED.rawValue))
        if isSubmitted {
            _ = request.withMemoryRebound(to: uv_req_t.self, capacity: 1) { uv_cancel($0) }
        }
    }

    /// The IPv4 and IPv6 addresses of a `getaddrinfo` list, in order, without duplicates.
    static func addresses(in list: UnsafeMutablePointer<addrinfo>?) -> [SocketAddress] {
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let address = current.pointee.ai_addr {
                var storage = sockaddr_storage()
                let length = min(Int(current.pointee.ai_addrlen), MemoryLayout<sockaddr_storage>.size)
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: length)) }
                if let socketAddress = SocketAddress(storage: storage), !addresses.contains(socketAddress) {
                    addresses.append(socketAddress)
                }
            }
            entry = current.pointee.ai_next
        }
        return addresses
    }
}

/// One `uv_getnameinfo` request, owned like ``AddressLookup``.
final class NameLookup: @unchecked Sendable {
    // @unchecked Sendable: `request` and `isSubmitted` are used only on the loop.
    let result = PendingResult<NameResolver.HostAndService>()
    private let request = UnsafeMutablePointer<uv_getnameinfo_t>.allocate(capacity: 1)
    private var isSubmitted = false

    deinit {
        request.deallocate()
    }

    func start(_ address: SocketAddress, on loop: EventLoop) {
        guard !result.isCompleted else { return }
        request.pointee.data = Owner.retain(self)
        let status = address.withSockaddr { sockaddr in
            uv_getnameinfo(loop.unsafeLoopPointer, request, { request, status, host, service in
                let lookup = Owner.release(request?.pointee.data, as: NameLookup.self)
                lookup.isSubmitted = false
                if status != 0 {
                    lookup.result.fail(EventLoop.error(status))
                } else {
                    lookup.result.succeed(NameResolver.HostAndService(
                        host: host.map { String(cString: $0) } ?? "", service: service.map { String(cString: $0) } ?? ""))
                }
            }, sockaddr, 0)
        }
        guard status == 0 else {
            _ = Owner.release(request.pointee.data, as: NameLookup.self)
            result.fail(EventLoop.error(status))
            return
        }
        isSubmitted = true
        loop.libuvStateDidChange()
    }

    func cancel() {
        result.fail(EventLoop.error(UV_EAI_CANCELED.rawValue))
        if isSubmitted {
            _ = request.withMemoryRebound(to: uv_req_t.self, capacity: 1) { uv_cancel($0) }
        }
    }
}
