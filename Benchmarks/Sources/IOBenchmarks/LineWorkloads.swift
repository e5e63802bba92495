import BenchmarkSupport
import Dispatch
import Flow
import FlowNet
import NIOCore
import NIOExtras
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// P18: a connection's bytes as lines. A plain blocking writer thread (the same for every
/// implementation) sends `count` lines of 64 bytes (63 and `\n`) over loopback in 64 KiB writes and
/// closes; the server counts the lines its framing hands it until the end of the stream. Lines per
/// second are timed from the accept to the end.
enum LineWorkloads {
    static let lineLength = 64
    static let operations = 2_000_000
    static let countingOperations = 200_000

    static func report(_ reporter: Reporter, _ measurement: IOMeasurement) {
        reporter.record("lines/s", 1e9 / measurement.nanosecondsPerOperation)
        reporter.record("allocs/line", measurement.allocationsPerOperation)
    }

    /// Connects to `port` on a thread of its own and writes `count` lines, then closes.
    static func startWriter(port: Int, lines count: Int) -> DispatchSemaphore {
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            precondition(status == 0, "connect failed: \(errno)")
            let linesPerWrite = 1024
            var line = [UInt8](repeating: UInt8(ascii: "x"), count: lineLength)
            line[lineLength - 1] = UInt8(ascii: "\n")
            let buffer = Array([[UInt8]](repeating: line, count: linesPerWrite).joined())
            var remaining = count
            while remaining > 0 {
                let lines = min(remaining, linesPerWrite)
                var offset = 0
                while offset < lines * lineLength {
                    let written = buffer.withUnsafeBytes {
                        send(fd, $0.baseAddress! + offset, lines * lineLength - offset, Int32(MSG_NOSIGNAL))
                    }
                    precondition(written > 0, "send failed: \(errno)")
                    offset += written
                }
                remaining -= lines
            }
            close(fd)
            finished.signal()
        }
        return finished
    }

    // MARK: Flow

    /// `for try await line in connection.lines()`, on a loop of its own thread.
    static func flowLines(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: operations, countingOperations: countingOperations) { count, stopwatch in
            let loop = EventLoop.startOnNewThread(name: "bench.lines")
            defer { loop.shutdown() }
            let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
            let listener = try! loop.scheduler.sync {
                try TCPListener.listen(port: 0, on: loop) { acceptedContinuation.yield($0) }
            }
            let writer = startWriter(port: listener.port, lines: count)
            blockingAwait {
                var connections = accepted.makeAsyncIterator()
                let connection = await connections.next()!
                stopwatch.start()
                var received = 0
                for try await line in connection.lines(maximumLength: 1024) {
                    received += line.utf8.count > 0 ? 1 : 0
                }
                stopwatch.stop()
                precondition(received == count, "\(received) lines of \(count)")
                _ = try await join(connection.close(), listener.close()).get()
            }
            writer.wait()
        }
        report(reporter, measurement)
    }

    /// P19-lines-main-actor: `for try await line in connection.lines()` on a connection of the main
    /// loop, which the main thread runs with `EventLoop.main.run()`, in a `@MainActor` task or in a
    /// detached one: the sequence's `next(isolation:)` keeps the main-actor loop on its executor.
    static func mainLoopLines(onMainActor: Bool) -> (Reporter) -> Void {
        { reporter in
            let measurement = reporter.measureIO(operations: 1_000_000, countingOperations: 200_000) { count, stopwatch in
                let (accepted, acceptedContinuation) = AsyncStream.makeStream(of: TCPConnection.self)
                let listener = try! TCPListener.listen(port: 0, on: .main) { acceptedContinuation.yield($0) }
                let writer = startWriter(port: listener.port, lines: count)
                let done = EventLoop.main.keepAlive()
                if onMainActor {
                    Task { @MainActor in
                        try await readLines(from: accepted, count: count, stopwatch: stopwatch, listener: listener)
                        done.dispose()
                    }
                } else {
                    Task.detached {
                        try await readLines(from: accepted, count: count, stopwatch: stopwatch, listener: listener)
                        done.dispose()
                    }
                }
                try! EventLoop.main.run()
                writer.wait()
            }
            report(reporter, measurement)
        }
    }

    /// Reads the first accepted connection's lines on the caller's actor, then closes it and `listener`.
    nonisolated(nonsending) static func readLines(
        from accepted: AsyncStream<TCPConnection>, count: Int, stopwatch: Stopwatch, listener: TCPListener
    ) async throws {
        var connections = accepted.makeAsyncIterator()
        let connection = await connections.next()!
        stopwatch.start()
        var received = 0
        for try await line in connection.lines(maximumLength: 1024) {
            received += line.utf8.count > 0 ? 1 : 0
        }
        stopwatch.stop()
        precondition(received == count, "\(received) lines of \(count)")
        _ = try await join(connection.close(), listener.close()).get()
    }

    /// `connection.lineSignal()`, listened to on the loop.
    static func flowLineSignal(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: operations, countingOperations: countingOperations) { count, stopwatch in
            onNewLoop { loop in
                let bag = DisposeBag()
                let received = LoopBox(0)
                let listener = LoopBox<TCPListener?>(nil)
                listener.value = try! TCPListener.listen(port: 0, on: loop) { connection in
                    stopwatch.start()
                    bag += connection.lineSignal(maximumLength: 1024).onEvent(on: .none) { event in
                        switch event {
                        case .value(let line):
                            received.value += line.utf8.count > 0 ? 1 : 0
                        case .end:
                            stopwatch.stop()
                            precondition(received.value == count, "\(received.value) lines of \(count)")
                            bag.dispose()
                            connection.close()
                            listener.value?.close()
                        }
                    }
                }
                _ = startWriter(port: listener.value!.port, lines: count)
            }
        }
        report(reporter, measurement)
    }

    // MARK: NIO

    final class LineCounter: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer

        let stopwatch: Stopwatch
        let expected: Int
        let finished: DispatchSemaphore
        var received = 0

        init(stopwatch: Stopwatch, expected: Int, finished: DispatchSemaphore) {
            self.stopwatch = stopwatch
            self.expected = expected
            self.finished = finished
        }

        func channelActive(context: ChannelHandlerContext) {
            stopwatch.start()
            context.fireChannelActive()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let line = unwrapInboundIn(data)
            received += line.readableBytes > 0 ? 1 : 0
        }

        func channelInactive(context: ChannelHandlerContext) {
            stopwatch.stop()
            precondition(received == expected, "\(received) lines of \(expected)")
            finished.signal()
            context.fireChannelInactive()
        }
    }

    /// `ByteToMessageHandler(LineBasedFrameDecoder())` and a handler counting the lines, on one loop.
    static func nioLines(_ reporter: Reporter) {
        let measurement = reporter.measureIO(operations: operations, countingOperations: countingOperations) { count, stopwatch in
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            defer { try! group.syncShutdownGracefully() }
            let finished = DispatchSemaphore(value: 0)
            let server = try! ServerBootstrap(group: group)
                .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: false)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                        try channel.pipeline.syncOperations.addHandler(
                            LineCounter(stopwatch: stopwatch, expected: count, finished: finished))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).wait()
            let writer = startWriter(port: server.localAddress!.port!, lines: count)
            finished.wait()
            writer.wait()
            try! server.close().wait()
        }
        report(reporter, measurement)
    }
}
