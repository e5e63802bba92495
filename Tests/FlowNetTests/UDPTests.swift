import Flow
import FlowNet
import Testing

@Suite("UDP")
struct UDPTests {
    @Test func aDatagramSentToAnEchoSocketComesBackWithItsSender() throws {
        let received = Shared<Datagram?>(nil)
        let addresses = Shared<(SocketAddress?, SocketAddress?)>((nil, nil))
        try runLoopCheckingHandles { loop in
            let server = try! UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
            server.onReceive { datagram in server.send(datagram.bytes, to: datagram.sender) }
            let client = try! UDPSocket.bind(on: loop)
            addresses.value = (server.localAddress, client.localAddress)
            client.onReceive { datagram in
                received.value = datagram
                client.close()
                server.close()
            }
            client.send(Array("ping".utf8), to: server.localAddress)
        }
        let datagram = try #require(received.value)
        #expect(datagram.bytes == Array("ping".utf8))
        #expect(datagram.sender == addresses.value.0)
        #expect(!datagram.isTruncated)
        #expect(addresses.value.1?.port ?? 0 > 0)
    }

    @Test func ipv6DatagramsAndAConnectedSocket() throws {
        guard hasIPv6Loopback else { return }
        let received = Shared<[String]>([])
        let peer = Shared<SocketAddress?>(nil)
        try runLoopCheckingHandles { loop in
            let server = try! UDPSocket.bind(host: "::1", port: 0, on: loop)
            let client = try! UDPSocket.bind(host: "::1", port: 0, on: loop)
            try! client.connect(to: server.localAddress)
            peer.value = client.remoteAddress
            server.onReceive { datagram in
                received.mutate { $0.append(String(decoding: datagram.bytes, as: UTF8.self)) }
                #expect(datagram.sender.isIPv6)
                if received.value.count == 2 {
                    client.close()
                    server.close()
                }
            }
            client.send(Array("one".utf8)).flatMap { client.send(Array("two".utf8)) }
        }
        #expect(received.value == ["one", "two"])
        #expect(peer.value?.host == "::1")
    }

    @Test func datagramsAreAnAsyncSequenceThatEndsOnClose() async throws {
        let loop = EventLoop.startOnNewThread(name: "udp.async")
        defer { loop.shutdown() }
        let socket = try loop.scheduler.sync { try UDPSocket.bind(on: loop) }
        var iterator = socket.datagrams.makeAsyncIterator()
        let sender = try loop.scheduler.sync { try UDPSocket.bind(on: loop) }
        try await sender.send(Array("hello".utf8), to: socket.localAddress).get()
        #expect(await iterator.next()?.bytes == Array("hello".utf8))
        try await socket.close().get()
        try await sender.close().get()
        #expect(await iterator.next() == nil)
    }

    @Test func aServerWrittenAsStructuredTasksEchoesUntilItsSocketClosesAndLeavesNoTaskBehind() async throws {
        let loop = EventLoop.startOnNewThread(name: "udp.structured")
        defer { loop.shutdown() }
        let server = try await UDPSocket.bindAsync(on: loop)
        let client = try await UDPSocket.bindAsync(on: loop)
        let echoed = try await withThrowingTaskGroup(of: Int.self) { group in
            let datagrams = server.datagrams
            group.addTask {
                var count = 0
                for await datagram in datagrams {
                    try await server.sendAsync(datagram.bytes, to: datagram.sender)
                    count += 1
                }
                return count
            }
            for word in ["one", "two", "three"] {
                try await client.sendAsync(Array(word.utf8), to: server.localAddress)
                #expect(try await client.receive().get().bytes == Array(word.utf8))
            }
            // Closing ends the sequence: the group's task returns, and the group with it.
            try await server.close().get()
            return try await group.reduce(0, +)
        }
        #expect(echoed == 3)
        await #expect(throws: EventLoopError.self) { try await server.sendAsync([1], to: client.localAddress) }
        try await client.close().get()
    }

    @Test func aDatagramLargerThanUDPCarriesFailsWithEMSGSIZEAndTheSocketStaysUsable() throws {
        let errors = Shared<[String]>([])
        let sockets = Shared<SocketsBound?>(nil)
        try runLoopCheckingHandles { loop in
            let socket = try! UDPSocket.bind(on: loop)
            socket.onReceive { datagram in
                errors.mutate { $0.append("received \(datagram.bytes.count)") }
                sockets.value = SocketsBound(at: socket.localAddress, .udp)
                socket.close()
            }
            socket.send([UInt8](repeating: 7, count: 70_000), to: socket.localAddress)
                .onError { error in errors.mutate { $0.append("\(error)") } }
                .always { socket.send([1, 2, 3], to: socket.localAddress) }
        }
        #expect(errors.value == ["EMSGSIZE: message too long", "received 3"])
        try #require(sockets.value).expectAllClosed()
    }

    @Test func bindingAPortInUseBroadcastAndMulticastOptionsReportClearly() throws {
        let outcomes = Shared<[String]>([])
        try runLoopCheckingHandles { loop in
            let socket = try! UDPSocket.bind(on: loop)
            do {
                _ = try UDPSocket.bind(host: "127.0.0.1", port: socket.localAddress.port, on: loop)
            } catch {
                outcomes.mutate { $0.append("\(error)") }
            }
            do {
                try socket.setBroadcast(true)
                outcomes.mutate { $0.append("broadcast on") }
                try socket.joinMulticastGroup("127.0.0.1")
            } catch {
                outcomes.mutate { $0.append("\(error)") }
            }
            socket.close()
        }
        #expect(outcomes.value == ["EADDRINUSE: address already in use", "broadcast on", "EINVAL: invalid argument"])
    }

    @Test func aMulticastGroupJoinedOnLoopbackReceivesWhatIsSentToIt() throws {
        let received = Shared<[UInt8]?>(nil)
        let joinError = Shared<String?>(nil)
        try runLoopCheckingHandles { loop in
            let receiver = try! UDPSocket.bind(host: "0.0.0.0", port: 0, reuseAddress: true, on: loop)
            let sender = try! UDPSocket.bind(on: loop)
            do {
                try receiver.joinMulticastGroup("239.255.42.99", interface: "127.0.0.1")
            } catch {
                // No multicast on this machine's loopback: the error is the finding.
                joinError.value = "\(error)"
                receiver.close()
                sender.close()
                return
            }
            receiver.onReceive { datagram in
                received.value = datagram.bytes
                try? receiver.leaveMulticastGroup("239.255.42.99", interface: "127.0.0.1")
                receiver.close()
                sender.close()
            }
            let group = try! SocketAddress(host: "239.255.42.99", port: receiver.localAddress.port)
            sender.send([9, 9], to: group).onError { error in
                joinError.value = "\(error)"
                receiver.close()
                sender.close()
            }
        }
        if let joinError = joinError.value {
            // A machine without a multicast route on loopback says so clearly.
            #expect(joinError.contains(":"))
        } else {
            #expect(received.value == [9, 9])
        }
    }

    @Test func optionsOnAClosingOrClosedSocketFailWithEBADF() throws {
        let failures = Shared<[String]>([])
        try runLoopCheckingHandles { loop in
            let socket = try! UDPSocket.bind(on: loop)
            let peer = try! SocketAddress(host: "127.0.0.1", port: 9)
            @Sendable func attemptEach() {
                let results = outcomes(of: [
                    { try socket.connect(to: peer) },
                    { try socket.setBroadcast(true) },
                    { try socket.setMulticastLoopback(false) },
                    { try socket.joinMulticastGroup("239.255.0.1") },
                    { try socket.leaveMulticastGroup("239.255.0.1") },
                ])
                failures.mutate { $0 += results }
            }
            // Closing (libuv has not called back yet), then closed (its memory is gone).
            socket.close().onValue { attemptEach() }
            attemptEach()
        }
        #expect(failures.value == Array(repeating: "EBADF: bad file descriptor", count: 10))
    }

    @Test(.timeLimit(.minutes(1))) func aReceiveErrorReachesTheErrorHandlerAndIsCounted() throws {
        // A connected socket whose peer's port has nothing bound: the kernel answers the datagram with
        // "port unreachable", which the next receive reports as ECONNREFUSED.
        let errors = Shared<[String]>([])
        let count = Shared(0)
        try runLoopCheckingHandles { loop in
            let closedPort = try! UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
            let peer = closedPort.localAddress
            closedPort.close().onValue {
                let socket = try! UDPSocket.bind(host: "127.0.0.1", port: 0, on: loop)
                try! socket.connect(to: peer)
                socket.onReceive { _ in Issue.record("nothing should arrive") }
                socket.onReceiveError { error in
                    errors.mutate { $0.append("\(error)") }
                    count.value = socket.failedReceiveCount
                    socket.close()
                }
                socket.send(Array("anyone?".utf8))
            }
        }
        #expect(errors.value == ["ECONNREFUSED: connection refused"])
        #expect(count.value == 1)
    }

    @Test func aMulticastGroupOrInterfaceHoldingANulByteIsRefused() throws {
        let failures = Shared<[String]>([])
        try runLoopCheckingHandles { loop in
            let socket = try! UDPSocket.bind(on: loop)
            failures.value = outcomes(of: [
                { try socket.joinMulticastGroup("239.255.0.1\0") },
                { try socket.joinMulticastGroup("239.255.0.1", interface: "0.0.0.0\0junk") },
                { try socket.leaveMulticastGroup("239.255.0.1\0") },
            ])
            socket.close()
        }
        #expect(failures.value == Array(repeating: "EINVAL: invalid argument", count: 3))
    }
}
