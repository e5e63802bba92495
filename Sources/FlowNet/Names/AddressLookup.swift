import CLibUV
import Flow

#if canImport(Glibc)
import Glibc
#endif

/// A name-service request on libuv's thread pool (`uv_getaddrinfo_t`, `uv_getnameinfo_t`): owned by
/// libuv (through `data`) from submission to its callback, its answer handed out as ``result``'s future.
class NameServiceRequest<Request, Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `request` and `isSubmitted` are used only on the loop (`submit`, `cancel` and
    // libuv's callbacks run there); `result` is Sendable.
    let result = PendingResult<Value>()
    let request = UnsafeMutablePointer<Request>.allocate(capacity: 1)
    private var isSubmitted = false
    /// Whether the lookup holds one of ``BlockingWorkLimiter``'s slots, given back once libuv is done
    /// with it (or it never reached libuv).
    private var holdsSlot = false

    deinit {
        request.deallocate()
    }

    /// Runs `start` in the loop's context once a slot of the pool's work that may block is free: a
    /// lookup can hang (an unreachable resolver), and lookups must not fill the pool with blocking
    /// work. A loop closed meanwhile fails the lookup.
    func startWhenSlotFree(on loop: EventLoop, _ start: @escaping @Sendable () -> Void) {
        loop.assertOpen("NameResolver")
        BlockingWorkLimiter.shared.whenSlotFree { [self] in
            let begin: @Sendable () -> Void = { [self] in
                holdsSlot = true
                start()
                // Not handed to libuv (cancelled while waiting, or refused): the slot is free again.
                if !isSubmitted { releaseSlot() }
            }
            if loop.isInLoopContext, !loop.isClosed {
                begin()
            } else if (try? loop.submit(begin)) == nil {
                result.fail(EventLoopError.closed)
                BlockingWorkLimiter.shared.release()
            }
        }
    }

    private func releaseSlot() {
        guard holdsSlot else { return }
        holdsSlot = false
        BlockingWorkLimiter.shared.release()
    }

    /// The request as libuv's base type: its `data` field, `uv_cancel`.
    private var baseRequest: UnsafeMutablePointer<uv_req_t> {
        UnsafeMutableRawPointer(request).assumingMemoryBound(to: uv_req_t.self)
    }

    /// Hands the request to libuv through `call` (which returns libuv's status), unless it was cancelled
    /// before the loop got to it. A request libuv refuses fails at once.
    func submit(on loop: EventLoop, _ call: () -> Int32) {
        guard !result.isCompleted else { return }
        baseRequest.pointee.data = Owner.retain(self)
        let status = call()
        guard status == 0 else {
            _ = Owner.release(baseRequest.pointee.data, as: NameServiceRequest.self)
            result.fail(EventLoop.error(status))
            return
        }
        isSubmitted = true
        loop.libuvStateDidChange()
    }

    /// Called by libuv's callback first: the request is no longer libuv's.
    func didFinish() {
        isSubmitted = false
        releaseSlot()
    }

    /// Cancels a lookup that has not started on the thread pool; one already running finishes, and
    /// its answer is dropped.
    func cancel() {
        result.fail(EventLoop.error(UV_EAI_CANCELED.rawValue))
        if isSubmitted {
            _ = uv_cancel(baseRequest)
        }
    }
}

/// One `uv_getaddrinfo` request.
final class AddressLookup: NameServiceRequest<uv_getaddrinfo_t, [SocketAddress]>, @unchecked Sendable {
    // @unchecked Sendable: as its superclass's; the strings are immutable.
    private let host: String
    private let service: String
    private let family: Int32

    init(host: String, service: String, family: Int32) {
        self.host = host
        self.service = service
        self.family = family
    }

    /// Stream sockets only: one entry per address instead of one per socket type.
    static func hints(family: Int32) -> addrinfo {
        var hints = addrinfo()
        hints.ai_family = family
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        return hints
    }

    func start(on loop: EventLoop) {
        var hints = Self.hints(family: family)
        submit(on: loop) {
            uv_getaddrinfo(loop.unsafeLoopPointer, request, { request, status, list in
                let lookup = Owner.release(request?.pointee.data, as: AddressLookup.self)
                lookup.didFinish()
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

/// One `uv_getnameinfo` request.
final class NameLookup: NameServiceRequest<uv_getnameinfo_t, NameResolver.HostAndService>, @unchecked Sendable {
    // @unchecked Sendable: as its superclass's.

    func start(_ address: SocketAddress, on loop: EventLoop) {
        submit(on: loop) {
            address.withSockaddr { sockaddr in
                uv_getnameinfo(loop.unsafeLoopPointer, request, { request, status, host, service in
                    let lookup = Owner.release(request?.pointee.data, as: NameLookup.self)
                    lookup.didFinish()
                    if status != 0 {
                        lookup.result.fail(EventLoop.error(status))
                    } else {
                        lookup.result.succeed(NameResolver.HostAndService(
                            host: host.map { String(cString: $0) } ?? "",
                            service: service.map { String(cString: $0) } ?? ""))
                    }
                }, sockaddr, 0)
            }
        }
    }
}
