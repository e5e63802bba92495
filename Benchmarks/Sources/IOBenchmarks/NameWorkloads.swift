import BenchmarkSupport
import Flow
import FlowNet
import NIOCore
import NIOPosix

/// P17: resolving `localhost` (in `/etc/hosts`), one lookup after the other.
///
/// SwiftNIO's `getaddrinfo` resolver is internal; its public way to resolve is connecting by name. So
/// the NIO figure is the time of `ClientBootstrap.connect(host: "localhost", ...)` less that of
/// `connect(to:)` the same address, each connecting to a listener on the same loop and closing. P17
/// compares that with `NameResolver.resolve`; P17-connect measures this library the same way as NIO
/// (`TCPConnection.connect(host:port:)` less `connect(to:)`), so the comparison holds either way.
enum NameWorkloads {
    static let host = "localhost"
    static let resolutions = 10_000
    /// Connections per variant: fewer, so that the closed connections waiting out TIME_WAIT do not
    /// use up the ephemeral ports across rounds.
    static let connections = 1_000

    /// P17 (NIO) reports the difference as its time per resolution; P17-connect reports both connects,
    /// the like-for-like figure for both libraries, then the difference.
    static func reportConnects(
        _ reporter: Reporter, byName: IOMeasurement, byAddress: IOMeasurement, asResolution: Bool
    ) {
        if !asResolution {
            reporter.record("connect by name µs", byName.nanosecondsPerOperation / 1e3)
            reporter.record("allocs/connect by name", byName.allocationsPerOperation)
            reporter.record("connect by address µs", byAddress.nanosecondsPerOperation / 1e3)
            reporter.record("allocs/connect by address", byAddress.allocationsPerOperation)
        }
        reporter.record("ns/resolution", byName.nanosecondsPerOperation - byAddress.nanosecondsPerOperation)
        reporter.record("allocs/resolution", byName.allocationsPerOperation - byAddress.allocationsPerOperation)
    }

    // MARK: Flow

    static func flowResolve(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: resolutions, countingOperations: 1_000) { count, stopwatch in
            onNewLoop { loop in
                let remaining = LoopBox(count)
                @Sendable func resolveNext() {
                    NameResolver.resolve(host: host, port: 80, on: loop).onValue { addresses in
                        guard !addresses.isEmpty else { fatalError("no address for \(host)") }
                        remaining.value -= 1
                        if remaining.value == 0 { stopwatch.stop() } else { resolveNext() }
                    }
                }
                stopwatch.start()
                resolveNext()
            }
        }
        reporter.record("ns/resolution", measurement.nanosecondsPerOperation)
        reporter.record("allocs/resolution", measurement.allocationsPerOperation)
    }

    static func flowConnects(byName: Bool, _ reporter: Reporter) -> IOMeasurement {
        reporter.measureIO(operations: connections, countingOperations: 200) { count, stopwatch in
            onNewLoop { loop in
                let listener = try! TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { connection in
                    connection.close()
                }
                let address = listener.localAddress
                let remaining = LoopBox(count)
                @Sendable func connectNext() {
                    let connected = byName
                        ? TCPConnection.connect(host: host, port: address.port, on: loop)
                        : TCPConnection.connect(to: address, on: loop)
                    connected.onValue { connection in
                        connection.close()
                        remaining.value -= 1
                        if remaining.value == 0 {
                            stopwatch.stop()
                            listener.close()
                        } else {
                            connectNext()
                        }
                    }
                }
                stopwatch.start()
                connectNext()
            }
        }
    }

    static func flowResolveThroughConnect(_ reporter: Reporter) {
        let byAddress = flowConnects(byName: false, reporter)
        let byName = flowConnects(byName: true, reporter)
        reportConnects(reporter, byName: byName, byAddress: byAddress, asResolution: false)
    }

    // MARK: NIO

    static func nioConnects(byName: Bool, group: MultiThreadedEventLoopGroup, _ reporter: Reporter) -> IOMeasurement {
        reporter.measureIO(operations: connections, countingOperations: 200) { count, stopwatch in
            let server = try! ServerBootstrap(group: group)
                .childChannelInitializer { channel in channel.close() }
                .bind(host: "127.0.0.1", port: 0).wait()
            let address = server.localAddress!
            let bootstrap = ClientBootstrap(group: group)
            stopwatch.start()
            for _ in 0..<count {
                let channel = byName
                    ? try! bootstrap.connect(host: host, port: address.port!).wait()
                    : try! bootstrap.connect(to: address).wait()
                // The server closes its end at once: the client may already be closed.
                try? channel.close().wait()
            }
            stopwatch.stop()
            try! server.close().wait()
        }
    }

    static func nioResolveThroughConnect(_ reporter: Reporter) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let byAddress = nioConnects(byName: false, group: group, reporter)
        let byName = nioConnects(byName: true, group: group, reporter)
        try! group.syncShutdownGracefully()
        reportConnects(reporter, byName: byName, byAddress: byAddress, asResolution: reporter.workload == "P17")
    }
}
