import Flow
import FlowNet
import Testing

/// A numeric service is a port, and is held to a port's range, as `resolve(host:port:)` holds a port:
/// `getaddrinfo` would take "99999" modulo 65,536, as port 34463.
@Suite("Names: numeric services")
struct ServicePortRangeTests {
    @Test("a numeric service above 65535 fails with EINVAL instead of wrapping around",
          arguments: ["65536", "99999", "4294967297", "99999999999999999999999"])
    func outOfRangeNumericServiceIsRefused(_ service: String) async throws {
        let loop = EventLoop.startOnNewThread(name: "names.serviceRange")
        defer { loop.shutdown() }
        let error = await #expect(throws: EventLoopError.self) {
            _ = try await NameResolver.resolve(host: "127.0.0.1", service: service, on: loop).get()
        }
        #expect(error.map { "\($0)" } == "EINVAL: invalid argument")
    }

    @Test("numeric services up to 65535, and named services, still resolve", arguments: [("0", 0), ("65535", 65535), ("0080", 80)])
    func inRangeNumericServiceResolves(_ service: String, _ port: Int) async throws {
        let loop = EventLoop.startOnNewThread(name: "names.serviceRange")
        defer { loop.shutdown() }
        let addresses = try await NameResolver.resolve(host: "127.0.0.1", service: service, on: loop).get()
        #expect(addresses.map(\.port) == [port])
    }
}
