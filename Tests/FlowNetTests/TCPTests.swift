import Dispatch
import Flow
import FlowNet
import Testing

/// Echoes everything a connection receives, then closes once the client has closed its side.
@Sendable
func echo(_ connection: TCPConnection) {
    connection.onRead { event in
        switch event {
        case .bytes(let bytes):
            connection.send(copying: bytes)
        case .endOfStream:
            connection.shutdown().always { connection.close() }
        case .failed:
            connection.close()
        }
    }
}

/// A pattern that makes misordered or lost bytes visible.
func pattern(count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 / 251) }
}

@Suite("TCP", .serialized)
struct TCPTests {
    @Test func listeningOnPortZeroReportsTheChosenPortAndAcceptsAConnection() throws {
        let seen = Shared<(listenerPort: Int, serverPeer: SocketAddress?, clientPeer: SocketAddress?)>((0, nil, nil))
        try runLoop { loop in
            let accepted = LoopState<TCPConnection?>(nil)
            let listener = try! TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { connection in
                seen.mutate { $0.serverPeer = connection.remoteAddress }
                accepted.value = connection
                connection.close()
            }
            seen.mutate { $0.listenerPort = listener.port }
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
                .onValue { client in
                    seen.mutate { $0.clientPeer = client.remoteAddress }
                    client.close()
                    listener.close()
                }
                .onError { error in
                    Issue.record("connect failed: \(error)")
                    listener.close()
                }
        }
        let result = seen.value
        #expect(result.listenerPort > 0)
        #expect(result.clientPeer == (try SocketAddress(host: "127.0.0.1", port: result.listenerPort)))
        #expect(result.serverPeer?.host == "127.0.0.1")
    }

    @Test func aReadHandlerSetOnAClosedConnectionIsToldOnceThatItFailed() throws {
        let events = Shared<[String]>([])
        try runLoop { loop in
            let listener = try! TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { $0.close() }
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onValue { client in
                client.close()
                // Closing: set before libuv has closed the handle; then again once it has.
                client.onRead { event in events.mutate { $0.append("closing: \(event)") } }
                events.mutate { $0.append("returned") }
                client.close().onValue {
                    client.onRead { event in events.mutate { $0.append("closed: \(event)") } }
                    listener.close()
                }
            }
        }
        #expect(events.value == [
            "returned",
            "closing: failed(ECANCELED: operation canceled)",
            "closed: failed(ECANCELED: operation canceled)",
        ])
    }

    @Test func bytesSentToAnEchoServerComeBackInOrder() throws {
        let sent = pattern(count: 1 << 20)
        let received = Shared<[UInt8]?>(nil)
        try runLoop { loop in
            let listener = try! TCPListener.listen(port: 0, on: loop, onAccept: echo)
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
                .flatMap { client in
                    client.write(sent)
                        .flatMap { client.shutdown() }
                        .flatMap { readToEnd(client) }
                        .always { client.close() }
                }
                .onResult { result in
                    received.value = try? result.get()
                    listener.close()
                }
        }
        #expect(received.value?.count == sent.count)
        #expect(received.value == sent)
    }

    @Test(.enabled(if: hasIPv6Loopback, "no IPv6 loopback on this machine"))
    func ipv6LoopbackListensAndEchoes() throws {
        let outcome = Shared<(address: String, reply: [UInt8]?)>(("", nil))
        try runLoop { loop in
            let listener = try! TCPListener.listen(host: "::1", port: 0, on: loop, onAccept: echo)
            outcome.mutate { $0.address = listener.localAddress.description }
            TCPConnection.connect(host: "::1", port: listener.port, on: loop)
                .flatMap { client in
                    client.write("over IPv6")
                        .flatMap { client.shutdown() }
                        .flatMap { readToEnd(client) }
                        .always { client.close() }
                }
                .onResult { result in
                    outcome.mutate { $0.reply = try? result.get() }
                    listener.close()
                }
        }
        #expect(outcome.value.address.hasPrefix("[::1]:"))
        #expect(outcome.value.reply == Array("over IPv6".utf8))
    }

    @Test func connectingWhereNobodyListensFailsWithLibuvsNameAndMessage() throws {
        let failure = Shared<String?>(nil)
        // A port bound but not listening, which no parallel test can take meanwhile (a port freed
        // by closing a listener can be given to another test's listener on port 0).
        let reserved = ReservedPort()
        try runLoop { loop in
            TCPConnection.connect(host: "127.0.0.1", port: reserved.port, on: loop)
                .onResult { result in
                    switch result {
                    case .success(let connection):
                        Issue.record("connected to a closed port")
                        connection.close()
                    case .failure(let error):
                        failure.value = "\(error)"
                    }
                }
        }
        #expect(failure.value == "ECONNREFUSED: connection refused")
    }

    @Test func listeningOnAPortInUseFailsWithAddressInUse() throws {
        let failure = Shared<String?>(nil)
        try runLoop { loop in
            let listener = try! TCPListener.listen(port: 0, on: loop) { $0.close() }
            do {
                let second = try TCPListener.listen(port: listener.port, on: loop) { $0.close() }
                second.close()
            } catch {
                failure.value = "\(error)"
            }
            listener.close()
        }
        #expect(failure.value == "EADDRINUSE: address already in use")
    }

    @Test func afterAHalfCloseThePeerStillAnswers() throws {
        let outcome = Shared<(serverHeard: [UInt8]?, clientHeard: [UInt8]?)>((nil, nil))
        try runLoop { loop in
            let listener = try! TCPListener.listen(port: 0, on: loop) { connection in
                // Read the whole question (until the client's shutdown), then answer and close.
                readToEnd(connection)
                    .flatMap { question in
                        outcome.mutate { $0.serverHeard = question }
                        return connection.write("answer")
                    }
                    .always { connection.close() }
            }
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
                .flatMap { client in
                    client.write("question")
                        .flatMap { client.shutdown() }
                        .flatMap { readToEnd(client) }
                        .always { client.close() }
                }
                .onResult { result in
                    outcome.mutate { $0.clientHeard = try? result.get() }
                    listener.close()
                }
        }
        #expect(outcome.value.serverHeard == Array("question".utf8))
        #expect(outcome.value.clientHeard == Array("answer".utf8))
    }

    @Test func aConnectionWithNothingQueuedIsWritableWhateverItsLimit() throws {
        let seen = Shared<[String]>([])
        try runLoop { loop in
            let listener = try! TCPListener.listen(port: 0, on: loop) { connection in connection.close() }
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onValue { client in
                // A limit of 0: hold nothing back. With nothing queued there is nothing to wait for;
                // whenWritable() used to wait for a write that would never come.
                client.writeBufferLimit = 0
                seen.mutate { $0.append("writable: \(client.isWritable)") }
                client.whenWritable().onValue { seen.mutate { $0.append("whenWritable") } }
                client.close()
                listener.close()
            }
        }
        #expect(seen.value == ["writable: true", "whenWritable"])
    }

    @Test func aNegativeWriteBufferLimitStopsWithAMessage() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try runLoop { loop in
                let listener = try! TCPListener.listen(port: 0, on: loop) { connection in connection.close() }
                TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onValue { client in
                    client.writeBufferLimit = -1
                    client.close()
                    listener.close()
                }
            }
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("TCPConnection.writeBufferLimit: the limit must not be negative, not -1"), "\(output)")
    }

    @Test func aWriteToAPeerThatDoesNotReadStaysPendingUntilThePeerReads() throws {
        let chunk = SharedBytes(pattern(count: 64 * 1024))
        struct Observed: Sendable {
            var written = 0
            var stalledWriteWasPending = false
            var queuedAtStall = -1
            var stalledWriteCompleted = false
            var serverReceived = 0
        }
        let observed = Shared(Observed())
        try runLoop { loop in
            let server = LoopState<TCPConnection?>(nil)
            let listener = try! TCPListener.listen(port: 0, on: loop) { connection in
                server.value = connection   // accepted, but not read: the client's bytes pile up
            }
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onValue { client in
                listener.close()
                repeatOnLoop {
                    let write = client.write(chunk)
                    observed.mutate { $0.written += chunk.count }
                    guard client.queuedWriteBytes > 0 else {
                        // The kernel took it all: go on once libuv reports the write done.
                        return write.map { true }
                    }
                    // The kernel's buffers are full: libuv holds the rest and the write waits.
                    observed.mutate {
                        $0.stalledWriteWasPending = write.result == nil
                        $0.queuedAtStall = client.queuedWriteBytes
                    }
                    write.onValue {
                        observed.mutate { $0.stalledWriteCompleted = true }
                        client.shutdown().always { client.close() }
                    }
                    // Now the server reads; that drains the kernel and completes the write.
                    if let connection = server.value {
                        connection.onRead { event in
                            switch event {
                            case .bytes(let bytes): observed.mutate { $0.serverReceived += bytes.count }
                            case .endOfStream, .failed: connection.close()
                            }
                        }
                    } else {
                        Issue.record("the server had not accepted the connection")
                        client.close()
                    }
                    return Future(false)
                }
            }
        }
        let result = observed.value
        #expect(result.stalledWriteWasPending)
        #expect(result.queuedAtStall > 0 && result.queuedAtStall <= chunk.count)
        #expect(result.stalledWriteCompleted)
        #expect(result.serverReceived == result.written)
    }

    @Test func anEchoServerPausingReadsHoldsABoundedAmountForAClientThatDoesNotRead() throws {
        let chunk = SharedBytes(pattern(count: 64 * 1024))
        let writeBufferLimit = 128 * 1024
        struct Observed: Sendable {
            var written = 0
            var echoed: Int?
            var largestServerQueue = 0
            var serverPauses = 0
        }
        let observed = Shared(Observed())
        try runLoop { loop in
            let serverPaused = LoopState(false)
            let clientState = LoopState<(connection: TCPConnection?, isDraining: Bool)>((nil, false))

            // Once the server has paused and the client's own writes are stuck, the client starts reading.
            @Sendable func drainIfBothSidesAreStuck() {
                guard serverPaused.value, let client = clientState.value.connection, !clientState.value.isDraining,
                      client.queuedWriteBytes > 0 else { return }
                clientState.value.isDraining = true
                readToEnd(client).onResult { result in
                    observed.mutate { $0.echoed = (try? result.get())?.count }
                    client.close()
                }
            }

            let listener = try! TCPListener.listen(port: 0, on: loop) { connection in
                connection.writeBufferLimit = writeBufferLimit
                connection.onRead { event in
                    switch event {
                    case .bytes(let bytes):
                        connection.send(copying: bytes)
                        let queued = connection.queuedWriteBytes
                        observed.mutate { $0.largestServerQueue = max($0.largestServerQueue, queued) }
                        if !connection.isWritable {
                            connection.pauseReading()
                            serverPaused.value = true
                            observed.mutate { $0.serverPauses += 1 }
                            connection.whenWritable().onValue {
                                serverPaused.value = false
                                connection.resumeReading()
                            }
                            drainIfBothSidesAreStuck()
                        }
                    case .endOfStream:
                        connection.shutdown().always { connection.close() }
                    case .failed:
                        connection.close()
                    }
                }
            }
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onValue { client in
                listener.close()
                clientState.value.connection = client
                repeatOnLoop {
                    let write = client.write(chunk)
                    observed.mutate { $0.written += chunk.count }
                    drainIfBothSidesAreStuck()
                    guard clientState.value.isDraining else { return write.map { true } }
                    return write.flatMap { client.shutdown() }.map { false }
                }
            }
        }
        let result = observed.value
        #expect(result.serverPauses > 0)
        // At most the limit plus one read's worth (64 KiB) waits in the server for the client.
        #expect(result.largestServerQueue <= writeBufferLimit + 64 * 1024)
        #expect(result.echoed == result.written)
    }

    @Test func closingTheListenerAndItsConnectionsLetsTheLoopReturn() throws {
        let closed = Shared<[String]>([])
        try runLoop { loop in
            let listener = try! TCPListener.listen(port: 0, on: loop) { connection in
                connection.close().onValue { closed.mutate { $0.append("server connection") } }
            }
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onValue { client in
                // The server closes its end: the client reads the end of the stream, then closes.
                readToEnd(client).always {
                    client.close().onValue {
                        #expect(!client.isOpen)
                        closed.mutate { $0.append("client") }
                    }
                    listener.close().onValue { closed.mutate { $0.append("listener") } }
                    // Closing again is harmless and reports the same.
                    listener.close().onValue { closed.mutate { $0.append("listener again") } }
                }
            }
        }
        // `runLoop` returned: no handle is left open.
        #expect(Set(closed.value) == ["server connection", "client", "listener", "listener again"])
    }

    @Test func chunksReadAsAnAsyncSequenceOnALoopThread() async throws {
        let loop = EventLoop.startOnNewThread(name: "net.async")
        defer { loop.shutdown() }
        let listener = try loop.scheduler.sync { try TCPListener.listen(port: 0, on: loop, onAccept: echo) }
        let client = try await withCheckedThrowingContinuation { continuation in
            TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onResult(on: .none) {
                continuation.resume(with: $0)
            }
        }
        let sent = pattern(count: 200_000)
        client.write(sent)
        client.shutdown()
        var received: [UInt8] = []
        for try await chunk in client.chunks {
            received += chunk
        }
        #expect(received == sent)
        await withCheckedContinuation { continuation in
            join(client.close(), listener.close()).onResult(on: .none) { _ in continuation.resume() }
        }
    }

    @Test("a listener group made from a detached task shares one port across its loops, and a port taken is a thrown error")
    func aListenerGroupFromAsyncCode() async throws {
        let loops = (0..<2).map { EventLoop.startOnNewThread(name: "net.asyncGroup-\($0)") }
        defer { for loop in loops { loop.shutdown() } }
        let group = try await Task.detached {
            try await TCPListenerGroup.listenAsync(host: "localhost", port: 0, loops: loops) { connection in
                connection.write(connection.loop.name).always { connection.close() }
            }
        }.value
        #expect(group.listeners.count == 2)
        #expect(Set(group.listeners.map(\.port)) == [group.port])
        #expect(zip(group.listeners, loops).allSatisfy { $0.loop === $1 })
        var answers: Set<String> = []
        for _ in 0..<8 {
            let client = try await TCPConnection.connect(to: group.localAddress, on: loops[0]).get()
            var answer: [UInt8] = []
            while let chunk = try await client.read().get() { answer += chunk }
            answers.insert(String(decoding: answer, as: UTF8.self))
            try await client.close().get()
        }
        #expect(!answers.isEmpty)
        #expect(answers.isSubset(of: Set(loops.map(\.name))))
        let sockets = SocketsBound(at: group.localAddress, .tcp)
        #expect(sockets.inodes.count == 2)
        try await group.close().get()
        sockets.expectAllClosed()

        // A port bound without SO_REUSEPORT cannot be joined.
        let reserved = ReservedPort()
        let refusal = await #expect(throws: EventLoopError.self) {
            _ = try await TCPListenerGroup.listenAsync(host: "127.0.0.1", port: reserved.port, loops: loops) { _ in }
        }
        #expect("\(refusal.map { "\($0)" } ?? "")".hasPrefix("EADDRINUSE"))
    }

    @Test func aListenerGroupSharesOnePortAcrossLoops() throws {
        let loops = (0..<2).map { EventLoop.startOnNewThread(name: "net.group-\($0)") }
        defer { for loop in loops { loop.shutdown() } }
        let group = try TCPListenerGroup.listen(port: 0, loops: loops) { connection in
            connection.write(connection.loop.name).always { connection.close() }
        }
        #expect(Set(group.listeners.map(\.port)) == [group.port])
        var answers: Set<String> = []
        for _ in 0..<8 {
            let client = try LoopbackClient(port: group.port)
            answers.insert(client.receiveToEnd())
        }
        #expect(!answers.isEmpty)
        #expect(answers.isSubset(of: Set(loops.map(\.name))))
        let closed = Shared(false)
        let done = DispatchSemaphore(value: 0)
        group.close().onResult(on: .none) { _ in
            closed.value = true
            done.signal()
        }
        _ = done.wait(timeout: .now() + .seconds(hangGuardSeconds))
        #expect(closed.value)
    }
}
