import BenchmarkSupport
import Flow
import FlowNet
import NIOCore
import NIOPosix

/// P14: UDP echo on loopback, one loop for both ends: a client keeps `window` datagrams of 64 bytes in
/// flight to an echo server and sends the next each time an echo comes back, until `count` echoes came
/// back. Datagrams per second counts echoes (each is two datagrams on the wire: there and back).
enum UDPWorkloads {
    static let window = 16
    static let payloadSize = 64
    static let operations = 200_000

    static func report(_ reporter: Reporter, _ measurement: IOMeasurement) {
        reporter.record("datagrams/s", 1e9 / measurement.nanosecondsPerOperation)
        reporter.record("allocs/echo", measurement.allocationsPerOperation)
    }

    // MARK: Flow

    static func flowEcho(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: operations, countingOperations: 20_000) { count, stopwatch in
            onNewLoop { loop in
                let payload = [UInt8](repeating: 7, count: payloadSize)
                let server = try! UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
                server.onReceive { datagram in server.send(datagram.bytes, to: datagram.sender) }
                let target = server.localAddress
                stopwatch.start()
                let client = try! UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
                let progress = LoopBox((sent: 0, received: 0))
                client.onReceive { _ in
                    progress.value.received += 1
                    if progress.value.received == count {
                        stopwatch.stop()
                        server.close()
                        client.close()
                    } else if progress.value.sent < count {
                        progress.value.sent += 1
                        client.send(payload, to: target)
                    }
                }
                for _ in 0..<window {
                    progress.value.sent += 1
                    client.send(payload, to: target)
                }
            }
        }
        report(reporter, measurement)
    }

    // MARK: NIO

    final class EchoHandler: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            context.writeAndFlush(data, promise: nil)
        }
    }

    final class ClientHandler: ChannelInboundHandler {
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>

        let count: Int
        let target: NIOCore.SocketAddress
        let finished: EventLoopPromise<Void>
        var sent = 0
        var received = 0

        init(count: Int, target: NIOCore.SocketAddress, finished: EventLoopPromise<Void>) {
            self.count = count
            self.target = target
            self.finished = finished
        }

        private func sendOne(_ context: ChannelHandlerContext) {
            sent += 1
            let buffer = context.channel.allocator.buffer(repeating: 7, count: payloadSize)
            context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: target, data: buffer)), promise: nil)
        }

        func channelActive(context: ChannelHandlerContext) {
            for _ in 0..<window { sendOne(context) }
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            received += 1
            if received == count {
                finished.succeed(())
            } else if sent < count {
                sendOne(context)
            }
        }
    }

    static func nioEcho(_ reporter: Reporter) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let measurement = reporter.measureIO(operations: operations, countingOperations: 20_000) { count, stopwatch in
            let server = try! DatagramBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(EchoHandler())
                    }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
            let target = server.localAddress!
            let finished = group.next().makePromise(of: Void.self)
            stopwatch.start()
            let client = try! DatagramBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(
                            ClientHandler(count: count, target: target, finished: finished))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
            try! finished.futureResult.wait()
            stopwatch.stop()
            try! client.close().wait()
            try! server.close().wait()
        }
        try! group.syncShutdownGracefully()
        report(reporter, measurement)
    }
}
