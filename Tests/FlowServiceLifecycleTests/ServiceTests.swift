import Flow
import FlowNet
import FlowServiceLifecycle
// Every file of this target sees what the test targets share.
@_exported import FlowTestSupport
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// Something that happens once, which a test can wait for without sleeping.
final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isOpen: Bool { state.withLock { $0.isOpen } }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isOpen = state.withLock { state -> Bool in
                if !state.isOpen { state.waiters.append(continuation) }
                return state.isOpen
            }
            if isOpen { continuation.resume() }
        }
    }
}

/// A value shared between a test and its server, guarded by Flow's `Locked`, which ThreadSanitizer sees.
/// A server for the tests: each connection waits for the client to send a byte, answers it, and
/// closes; it counts as work in progress until then.
struct TestServer {
    let accepted = Latch()
    let stoppedAccepting = Latch()
    let forcedClose = Latch()
    let port = Shared(0)
    let listening = Latch()
    let connections = Shared<[TCPConnection]>([])

    func service(shutdownDeadline: Duration) -> FlowServerService {
        FlowServerService(loopCount: 1, name: "test.server", shutdownDeadline: shutdownDeadline) { loops in
            let work = InFlightWork()
            let loop = loops[0]
            let listener = try loop.scheduler.sync { () throws -> TCPListener in
                try TCPListener.listen(port: 0, on: loop) { connection in
                    let token = work.begin()
                    connections.set(connections.value + [connection])
                    accepted.open()
                    connection.read().flatMap { _ in connection.write("bye") }.always {
                        connection.close()
                        token.dispose()
                    }
                }
            }
            port.set(listener.port)
            listening.open()
            return FlowServerService.Running(
                stopAccepting: {
                    listener.close().onValue(on: .none) { stoppedAccepting.open() }
                },
                finishWork: { work.whenIdle() },
                forceClose: {
                    forcedClose.open()
                    for connection in connections.value { connection.close() }
                })
        }
    }
}

@Suite("FlowServiceLifecycle: Flow loops and servers under a ServiceGroup", .checksLiveFutures)
struct ServiceTests {
    /// The group's own lines (starting, shutting down) are not what these tests check.
    let logger: Logger = {
        var logger = Logger(label: "flow.tests")
        logger.logLevel = .error
        return logger
    }()

    @Test func gracefulShutdownStopsAcceptingLetsWorkFinishThenClosesTheLoops() async throws {
        let server = TestServer()
        let service = server.service(shutdownDeadline: .seconds(60))
        let group = ServiceGroup(services: [service], logger: logger)
        let running = Task { try await group.run() }

        try await withClientLoop { clientLoop in
            let started = await waitForPort(server)
            let client = try await TCPConnection.connect(host: "127.0.0.1", port: started, on: clientLoop).get()
            await server.accepted.wait()

            await group.triggerGracefulShutdown()
            await server.stoppedAccepting.wait()
            // Not accepting: a new connection is refused. The port is free once the listener
            // closed, and a test running in parallel may have bound it meanwhile: a connection that
            // succeeds is to that test's listener, and this server must still have accepted only one.
            if let late = try? await TCPConnection.connect(host: "127.0.0.1", port: started, on: clientLoop).get() {
                _ = try? await late.close().get()
                #expect(service.loops[0].performAndWait { server.connections.value.count } == 1)
            }
            // The connection in progress still gets its answer.
            #expect(service.loops.allSatisfy { !$0.isClosed })
            _ = try await client.write("hi").get()
            let answer = try await client.read().get()
            #expect(answer.map { String(decoding: $0, as: UTF8.self) } == "bye")
            _ = try? await client.close().get()
        }
        try await running.value
        #expect(!server.forcedClose.isOpen)
        #expect(service.loops.allSatisfy { $0.isClosed })
    }

    @Test func workStillInProgressAtTheDeadlineIsClosed() async throws {
        let server = TestServer()
        let service = server.service(shutdownDeadline: .milliseconds(50))
        let group = ServiceGroup(services: [service], logger: logger)
        let running = Task { try await group.run() }

        try await withClientLoop { clientLoop in
            let started = await waitForPort(server)
            let client = try await TCPConnection.connect(host: "127.0.0.1", port: started, on: clientLoop).get()
            await server.accepted.wait()
            await group.triggerGracefulShutdown()
            // The client never sends its byte: the server closes the connection at the deadline.
            let answer = try? await client.read().get()
            #expect((answer ?? nil) == nil)
            _ = try? await client.close().get()
        }
        try await running.value
        #expect(server.forcedClose.isOpen)
        #expect(service.loops.allSatisfy { $0.isClosed })
    }

    @Test func loopsOfAnEventLoopServiceCloseOnGracefulShutdown() async throws {
        let loops = EventLoopService(count: 2, name: "test.loops")
        let group = ServiceGroup(services: [loops], logger: logger)
        let running = Task { try await group.run() }
        let ranOnLoop = try await Flow.Future<Bool>(on: loops.loops[1].scheduler) { completion in
            completion(.success(loops.loops[1].isInLoopContext))
            return NilDisposer()
        }.get()
        #expect(ranOnLoop)
        await group.triggerGracefulShutdown()
        try await running.value
        #expect(loops.loops.allSatisfy { $0.isClosed })
    }

    @Test func inFlightWorkIsIdleOnceEveryTokenIsDisposed() {
        let work = InFlightWork()
        #expect(work.whenIdle().isCompleted)
        let first = work.begin()
        let second = work.begin()
        let idle = work.whenIdle()
        first.dispose()
        first.dispose()
        #expect(!idle.isCompleted)
        #expect(work.count == 1)
        second.dispose()
        #expect(idle.isCompleted)
        #expect(work.count == 0)
    }

    private func waitForPort(_ server: TestServer) async -> Int {
        await server.listening.wait()
        return server.port.value
    }

    private func withClientLoop(_ body: (Flow.EventLoop) async throws -> Void) async throws {
        let loop = Flow.EventLoop.startOnNewThread(name: "test.client")
        do {
            try await body(loop)
        } catch {
            loop.shutdown()
            throw error
        }
        loop.shutdown()
    }
}
