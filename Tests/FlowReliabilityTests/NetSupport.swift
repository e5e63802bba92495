import Dispatch
import Flow
import FlowNet
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Waits for `future` on the calling thread (never a loop's), recording a failure after the hang guard.
func wait<Value>(
    for future: Future<Value>, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) -> Result<Value>? {
    let done = DispatchSemaphore(value: 0)
    future.onResult(on: .none) { _ in done.signal() }
    guard done.wait(timeout: .now() + reliabilityHangGuard) == .success else {
        Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
        return nil
    }
    return future.result
}

/// An echo server like Examples/EchoServer, in process, counting its open connections.
final class EchoServer: Sendable {
    let loop: EventLoop
    let listener: TCPListener
    let openConnections = AtomicCounter()
    let acceptedConnections = AtomicCounter()

    init(on loop: EventLoop) throws {
        self.loop = loop
        let openConnections = self.openConnections
        let acceptedConnections = self.acceptedConnections
        listener = try loop.scheduler.sync { () throws -> TCPListener in
            try TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { connection in
                openConnections.increment()
                acceptedConnections.increment()
                EchoServer.echo(connection) { openConnections.value.subtract(1, ordering: .acquiringAndReleasing) }
            }
        }
    }

    var port: Int { listener.port }

    /// Sends back every byte, pausing reads while the echo waits for the client to read.
    /// Calls `onClosed` once, when the connection has closed.
    static func echo(_ connection: TCPConnection, onClosed: @escaping @Sendable () -> Void) {
        let closing = AtomicCounter()
        let close: @Sendable () -> Void = {
            guard closing.increment() == 1 else { return }
            connection.close().onValue(on: .none) { onClosed() }
        }
        connection.onRead { event in
            switch event {
            case .bytes(let bytes):
                connection.send(copying: bytes)
                if !connection.isWritable {
                    connection.pauseReading()
                    connection.whenWritable().onValue { connection.resumeReading() }
                }
            case .endOfStream:
                connection.shutdown().always { close() }
            case .failed:
                close()
            }
        }
    }

    /// How many failed accepts the listener counted.
    var failedAcceptCount: Int { loop.scheduler.sync { listener.failedAcceptCount } }

    func close() {
        _ = wait(for: listener.close(), "the echo listener to close")
    }
}

/// Sends `text` to the echo server at `port` from `loop` and returns what came back before the
/// server closed, or the error.
func echoRoundTrip(_ text: String, port: Int, on loop: EventLoop) -> Result<String>? {
    let exchange = TCPConnection.connect(host: "127.0.0.1", port: port, on: loop)
        .flatMap(on: .none) { connection -> Future<String> in
            connection.write(text)
                .flatMap(on: .none) { connection.shutdown() }
                .flatMap(on: .none) { readAll(connection, into: []) }
                .map(on: .none) { String(decoding: $0, as: UTF8.self) }
                .always(on: .none) { connection.close() }
        }
    return wait(for: exchange, "an echo round trip")
}

/// Reads until the peer closes its side.
func readAll(_ connection: TCPConnection, into received: [UInt8]) -> Future<[UInt8]> {
    connection.read().flatMap(on: .none) { chunk -> Future<[UInt8]> in
        guard let chunk else { return Future(received) }
        return readAll(connection, into: received + chunk)
    }
}

/// The resident set size of this process, in bytes, from /proc/self/statm.
func residentBytes() -> Int {
    guard let file = fopen("/proc/self/statm", "r") else { return 0 }
    defer { fclose(file) }
    var size = 0
    var resident = 0
    guard withUnsafeMutablePointer(to: &size, { sizePointer in
        withUnsafeMutablePointer(to: &resident) { residentPointer in
            withVaList([sizePointer, residentPointer]) { vfscanf(file, "%ld %ld", $0) }
        }
    }) == 2 else { return 0 }
    return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
}
