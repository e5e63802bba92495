import Flow
import FlowNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Names")
struct NameTests {
    @Test func localhostResolvesToLoopbackAddressesWithThePortGiven() throws {
        let found = Shared<Result<[SocketAddress]>?>(nil)
        try runLoopCheckingHandles { loop in
            NameResolver.resolve(host: "localhost", port: 8080, on: loop).onResult { found.value = $0 }
        }
        let addresses = try #require(found.value).get()
        #expect(!addresses.isEmpty)
        #expect(addresses.allSatisfy { $0.port == 8080 && ($0.host == "127.0.0.1" || $0.host == "::1") })
        #expect(Set(addresses).count == addresses.count, "no duplicates")
    }

    @Test func aNumericHostComesBackWithoutALookupAndAFamilyFilterApplies() throws {
        let found = Shared<[Result<[SocketAddress]>]>([])
        try runLoopCheckingHandles { loop in
            NameResolver.resolve(host: "::1", port: 1, on: loop).onResult { result in found.mutate { $0.append(result) } }
            NameResolver.resolve(host: "localhost", port: 2, family: .ipv4, on: loop)
                .onResult { result in found.mutate { $0.append(result) } }
        }
        let results = found.value
        #expect(results.count == 2)
        #expect(try results.first { (try? $0.get())?.first?.port == 1 }?.get() == [try SocketAddress(host: "::1", port: 1)])
        #expect(try results.first { (try? $0.get())?.first?.port == 2 }?.get() == [try SocketAddress(host: "127.0.0.1", port: 2)])
    }

    @Test func aNameThatDoesNotResolveFailsWithTheResolversError() throws {
        let found = Shared<Result<[SocketAddress]>?>(nil)
        try runLoopCheckingHandles { loop in
            NameResolver.resolve(host: "no-such-host.invalid", port: 80, on: loop).onResult { found.value = $0 }
        }
        let result = try #require(found.value)
        guard case .failure(let error) = result, case .libuv(_, let name, let message)? = error as? EventLoopError else {
            Issue.record("expected a libuv error, got \(result)")
            return
        }
        // EAI_NONAME with a DNS server to ask, EAI_AGAIN without one (offline).
        #expect(name.hasPrefix("EAI_"), "\(name): \(message)")
        #expect("\(error)" == "\(name): \(message)")
    }

    @Test func aHostOrServiceHoldingANulByteIsRefusedRatherThanCutShort() throws {
        // Cut at the NUL byte, each would resolve "localhost" (or "127.0.0.1", or service "80"): an
        // allow-list check on the whole name would not be about the host reached.
        let found = Shared<[String]>([])
        let listened = Shared<[String]>([])
        try runLoopCheckingHandles { loop in
            let lookups = [
                NameResolver.resolve(host: "localhost\u{0}.example.com", port: 80, on: loop),
                NameResolver.resolve(host: "127.0.0.1\u{0}.example.com", port: 80, on: loop),
                NameResolver.resolve(host: "localhost", service: "80\u{0}x", on: loop),
                TCPConnection.connect(host: "127.0.0.1\u{0}.example.com", port: 9, on: loop).map { connection in
                    connection.close()
                    return []
                },
            ]
            join(lookups.map { lookup in lookup.mapResult { $0.error.map { "\($0)" } ?? "resolved" } })
                .onValue { found.value = $0 }
            for host in ["127.0.0.1\u{0}.example.com", "localhost\u{0}.example.com"] {
                do {
                    let listener = try TCPListener.listen(host: host, port: 0, on: loop) { $0.close() }
                    listener.close()
                    listened.mutate { $0.append("listened") }
                } catch {
                    listened.mutate { $0.append("\(error)") }
                }
            }
        }
        #expect(found.value == Array(repeating: "EINVAL: invalid argument", count: 4))
        #expect(listened.value == Array(repeating: "EINVAL: invalid argument", count: 2))
        #expect(throws: EventLoopError.self) { try SocketAddress(host: "127.0.0.1\u{0}x", port: 80) }
    }

    @Test func theReverseLookupOfTheLoopbackAddressIsLocalhost() throws {
        let found = Shared<Result<NameResolver.HostAndService>?>(nil)
        try runLoopCheckingHandles { loop in
            NameResolver.name(of: try! SocketAddress(host: "127.0.0.1", port: 80), on: loop).onResult { found.value = $0 }
        }
        let name = try #require(found.value).get()
        #expect(name.host == "localhost")
        #expect(name.service == "http" || name.service == "80")
    }

    @Test func aServerListeningOnLocalhostIsReachedByName() throws {
        let echoed = Shared<Result<[UInt8]>?>(nil)
        let sockets = Shared<SocketsBound?>(nil)
        try runLoopCheckingHandles { loop in
            let listener = try! TCPListener.listen(host: "localhost", port: 0, on: loop, onAccept: echo)
            TCPConnection.connect(host: "localhost", port: listener.port, on: loop)
                .flatMap { connection in
                    connection.write("by name").flatMap { connection.shutdown() }
                        .flatMap { readToEnd(connection) }
                        .always { connection.close() }
                }
                .onResult { result in
                    echoed.value = result
                    sockets.value = SocketsBound(at: listener.localAddress, .tcp)
                    listener.close()
                }
        }
        #expect(try #require(echoed.value).get() == Array("by name".utf8))
        try #require(sockets.value).expectAllClosed()
    }

    @Test func aListenerOnTheIPv6WildcardAcceptsIPv4Clients() throws {
        guard hasIPv6Loopback else { return }
        let connected = Shared<Result<SocketAddress?>?>(nil)
        try runLoopCheckingHandles { loop in
            let listener = try! TCPListener.listen(host: "::", port: 0, on: loop) { $0.close() }
            #expect(listener.localAddress.isIPv6)
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
                .onResult { result in
                    connected.value = result.map { $0.remoteAddress }
                    if let connection = try? result.get() { connection.close() }
                    listener.close()
                }
        }
        #expect(try #require(connected.value).get()?.host == "127.0.0.1")
    }

    @Test func connectingByNameToAPortNobodyListensOnIsRefused() throws {
        let found = Shared<Result<TCPConnection>?>(nil)
        // Bound on every local address but not listening, and nobody else's while it lives (a port
        // freed by closing a listener can be given to a parallel test's listener).
        let reserved = ReservedPort()
        try runLoopCheckingHandles { loop in
            TCPConnection.connect(host: "localhost", port: reserved.port, on: loop).onResult { found.value = $0 }
        }
        guard case .failure(let error)? = found.value else {
            Issue.record("expected a refusal, got \(String(describing: found.value))")
            return
        }
        #expect("\(error)" == "ECONNREFUSED: connection refused")
    }

    @Test func aPortInUseIsReportedByListen() throws {
        let failure = Shared<String?>(nil)
        try runLoopCheckingHandles { loop in
            let first = try! TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { $0.close() }
            do {
                _ = try TCPListener.listen(host: "localhost", port: first.port, on: loop) { $0.close() }
            } catch {
                failure.value = "\(error)"
            }
            first.close()
        }
        #expect(failure.value == "EADDRINUSE: address already in use")
    }

    @Test func anAttemptThatDoesNotConnectInTimeGivesWayToTheNextAddress() throws {
        // A listener whose accept queue is full drops new connection requests: connecting to it hangs.
        let stalled = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(stalled) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                _ = bind(stalled, address, length)
                _ = getsockname(stalled, address, &length)
            }
        }
        listen(stalled, 0)
        let stalledPort = Int(UInt16(bigEndian: address.sin_port))
        let timeoutError = Shared<String?>(nil)
        let outcome = Shared<Result<Int>?>(nil)
        let goodPort = Shared(0)
        try runLoopCheckingHandles { loop in
            let listener = try! TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { $0.close() }
            goodPort.value = listener.port
            let stalledAddress = try! SocketAddress(host: "127.0.0.1", port: stalledPort)
            let fillers = LoopState<[TCPConnection]>([])
            // Fill the stalled listener's queue until an attempt times out; then try it first and the
            // real listener second.
            repeatOnLoop {
                TCPConnection.connect(toFirstOf: [stalledAddress], attemptTimeout: 0.3, on: loop)
                    .map { connection in
                        fillers.value.append(connection)
                        return fillers.value.count < 8
                    }
                    .flatMapError { error in
                        timeoutError.value = "\(error)"
                        return TCPConnection.connect(
                            toFirstOf: [stalledAddress, listener.localAddress], attemptTimeout: 0.3, on: loop)
                            .onResult { result in
                                outcome.value = result.map { $0.remoteAddress?.port ?? -1 }
                                if let connection = try? result.get() { connection.close() }
                                for connection in fillers.value { connection.close() }
                                listener.close()
                            }
                            .map { _ in false }
                    }
            }
        }
        #expect(timeoutError.value == "ETIMEDOUT: connection timed out")
        #expect(try #require(outcome.value).get() == goodPort.value)
    }
}
