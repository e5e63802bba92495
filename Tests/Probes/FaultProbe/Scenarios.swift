import Dispatch
import Flow
import FlowNet
import FlowSystem
import Glibc
import HTTPParsing
import Synchronization

/// What a run does.
enum Scenario: String, CaseIterable {
    case tcp, unix, file, chunks, udp, process, http, lookup

    /// The kinds of fault that reach a call this scenario makes.
    var faults: [FaultKind] {
        switch self {
        case .tcp, .unix, .process, .http: [.eintr, .eagain, .short, .enomem, .enobufs, .emfile, .econnreset, .alloc]
        case .file: [.eintr, .short, .eio, .emfile, .alloc]
        // Its open and reads are FlowSystem's own calls, on pool jobs libuv queues without allocating.
        case .chunks: [.eintr, .short, .eio, .emfile]
        case .udp: [.eintr, .eagain, .enomem, .enobufs, .emfile, .alloc]
        case .lookup: [.eagain, .enomem, .alloc]
        }
    }

    /// Starts a run on `loop` (in its context); it ends with `state.finish`.
    func start(on loop: EventLoop, state: RunState) {
        switch self {
        case .tcp: streamEcho(on: loop, state: state, overUnixSocket: false)
        case .unix: streamEcho(on: loop, state: state, overUnixSocket: true)
        case .file: fileWriteAndRead(on: loop, state: state)
        case .chunks: fileChunks(on: loop, state: state)
        case .udp: datagramEcho(on: loop, state: state)
        case .process: childOutput(on: loop, state: state)
        case .http: httpExchange(on: loop, state: state)
        case .lookup: nameLookup(on: loop, state: state)
        }
    }
}

/// How many bytes a stream run sends through the echo and checks on their way back.
let streamBytes = 1 << 20

// MARK: - TCP and Unix-socket echo

/// An echo server's side of one connection: sends back every byte, pausing reads while the client
/// does not take them; closes on the end of the stream or on an error, which it tells `state` of.
func serveEcho(_ connection: StreamConnection, state: RunState) {
    state.closing.enter()
    state.accepted()
    let isClosing = Mutex(false)
    let close: @Sendable () -> Void = {
        guard !isClosing.withLock({ let was = $0; $0 = true; return was }) else { return }
        connection.close().always(on: .none) { state.closing.leave() }
    }
    connection.onRead { event in
        switch event {
        case .bytes(let bytes):
            connection.send(copying: bytes) { error in
                if let error {
                    state.heard("server write: \(error)")
                    close()
                }
            }
            if !connection.isWritable {
                connection.pauseReading()
                connection.whenWritable().onValue(on: .none) { connection.resumeReading() }
            }
        case .endOfStream:
            connection.shutdown().always(on: .none) { close() }
        case .failed(let error):
            state.heard("server read: \(error)")
            close()
        }
    }
}

/// A client sends `streamBytes` through an echo server and checks each byte that comes back.
func streamEcho(on loop: EventLoop, state: RunState, overUnixSocket: Bool) {
    let seed = state.seed
    let closeListener: @Sendable () -> Future<Void>
    let connecting: Future<StreamConnection>
    let failedAccepts: @Sendable () -> Int
    do {
        if overUnixSocket {
            let path = "/tmp/flow-faults-\(getpid()).sock"
            unlink(path)
            let listener = try PipeListener.listen(path: path, on: loop) { serveEcho($0, state: state) }
            closeListener = { listener.close() }
            failedAccepts = { listener.failedAcceptCount }
            connecting = PipeConnection.connect(toPath: path, on: loop).map(on: .none) { $0 as StreamConnection }
        } else {
            let listener = try TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { serveEcho($0, state: state) }
            closeListener = { listener.close() }
            failedAccepts = { listener.failedAcceptCount }
            connecting = TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop)
                .map(on: .none) { $0 as StreamConnection }
        }
    } catch {
        state.finish(.failed("listen: \(error)"))
        return
    }
    state.closing.enter()   // the listener
    let hasEnded = Mutex(false)
    // Ends the run once: closes the client's connection (if it has one) and the listener.
    let end: @Sendable (Outcome?, StreamConnection?) -> Void = { outcome, connection in
        guard !hasEnded.withLock({ let was = $0; $0 = true; return was }) else { return }
        loop.execute {
            let accepts = failedAccepts()
            if accepts > 0 { state.heard("\(accepts) failed accepts") }
            if let outcome { state.finish(outcome) } else { state.failOrViolate("the echo ended early") }
            connection?.close().always(on: .none) { state.closing.leave() }
            closeListener().always(on: .none) { state.closing.leave() }
        }
    }
    connecting.onResult(on: loop.scheduler) { result in
        let connection: StreamConnection
        switch result {
        case .failure(let error):
            state.heard(error)
            end(.failed("connect: \(error)"), nil)
            return
        case .success(let connected):
            connection = connected
        }
        state.closing.enter()   // the client's connection
        var received = 0
        var isDone = false
        connection.onRead { event in
            guard !isDone else { return }
            switch event {
            case .bytes(let bytes):
                for (index, byte) in bytes.enumerated() where byte != patternByte(seed: seed, offset: received + index) {
                    isDone = true
                    end(.violated("byte \(received + index) of \(streamBytes) differs"), connection)
                    return
                }
                received += bytes.count
                state.countChecked(bytes.count)
                if received > streamBytes {
                    isDone = true
                    end(.violated("\(received - streamBytes) bytes more than sent"), connection)
                } else if received == streamBytes {
                    isDone = true
                    end(.completed, connection)
                }
            case .endOfStream:
                isDone = true
                end(nil, connection)
            case .failed(let error):
                isDone = true
                state.heard(error)
                end(.failed("client read: \(error)"), connection)
            }
        }
        let chunk = 64 * 1024
        @Sendable func writeNext(from offset: Int) {
            guard offset < streamBytes, !state.isFinished else { return }
            let bytes = (offset..<min(offset + chunk, streamBytes)).map { patternByte(seed: seed, offset: $0) }
            connection.write(bytes).onResult(on: loop.scheduler) { result in
                if case .failure(let error) = result {
                    state.heard("client write: \(error)")
                    end(.failed("client write: \(error)"), connection)
                } else {
                    writeNext(from: offset + bytes.count)
                }
            }
        }
        writeNext(from: 0)
    }
}

// MARK: - Files

/// A fresh directory for a file run, made and later emptied with plain calls (never faulted).
func makeRunDirectory() -> String {
    var template = Array("/tmp/flow-faults-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

/// The names in `directory`, then removes them and it.
func emptyAndRemove(_ directory: String) -> [String] {
    var names: [String] = []
    if let handle = opendir(directory) {
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        closedir(handle)
    }
    for name in names { unlink("\(directory)/\(name)") }
    rmdir(directory)
    return names
}

/// Writes `bytes` to `path` with plain calls (never faulted).
func writePlainly(_ bytes: [UInt8], to path: String) {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    var written = 0
    while written < bytes.count {
        let result = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, bytes.count - written) }
        if result <= 0 { break }
        written += result
    }
    close(descriptor)
}

let fileBytes = 256 * 1024

/// `writeFile` replaces a file's old content with new (through a temporary file and a rename), then
/// `readFile` reads it back: all the new content if the write succeeded, all the old if it failed,
/// and no temporary file left behind either way.
func fileWriteAndRead(on loop: EventLoop, state: RunState) {
    let directory = makeRunDirectory()
    let path = "\(directory)/file"
    let old = pattern(seed: state.seed &+ 1, count: fileBytes / 2)
    let new = pattern(seed: state.seed, count: fileBytes)
    writePlainly(old, to: path)
    state.closing.enter()
    FileSystem.writeFile(at: path, contents: new, on: loop).onResult(on: .none) { written in
        if case .failure(let error) = written { state.heard("writeFile: \(error)") }
        FileSystem.readFile(at: path, on: loop).onResult(on: .none) { read in
            defer { state.closing.leave() }
            let left = emptyAndRemove(directory).filter { $0 != "file" }
            switch (written, read) {
            case (_, .failure(let error)):
                state.heard(error)
                state.finish(.failed("readFile: \(error)"))
            case (.success, .success(let bytes)) where bytes == new:
                state.countChecked(bytes.count)
                state.finish(left.isEmpty ? .completed : .violated("left behind: \(left)"))
            case (.failure(let error), .success(let bytes)) where bytes == old:
                state.countChecked(bytes.count)
                state.finish(left.isEmpty ? .failed("writeFile: \(error)") : .violated("left behind after \(error): \(left)"))
            case (.success, .success(let bytes)):
                state.finish(.violated("writeFile succeeded; read back \(bytes.count) bytes, not the \(new.count) written"))
            case (.failure(let error), .success(let bytes)):
                state.finish(.violated("writeFile failed (\(error)); read back \(bytes.count) bytes, not the old content"))
            }
        }
    }
}

/// Reads a file through `chunks`, checking each byte in order.
func fileChunks(on loop: EventLoop, state: RunState) {
    let directory = makeRunDirectory()
    let path = "\(directory)/file"
    let size = 1 << 20
    writePlainly(pattern(seed: state.seed, count: size), to: path)
    state.closing.enter()
    let seed = state.seed
    FileSystem.open(path, on: loop).onResult(on: .none) { opened in
        guard case .success(let file) = opened else {
            if case .failure(let error) = opened { state.heard(error); state.finish(.failed("open: \(error)")) }
            _ = emptyAndRemove(directory)
            state.closing.leave()
            return
        }
        Task {
            var received = 0
            var outcome = Outcome.completed
            do {
                for try await chunk in file.chunks(size: 16 * 1024) {
                    if let index = chunk.indices.first(where: { chunk[$0] != patternByte(seed: seed, offset: received + $0) }) {
                        outcome = .violated("byte \(received + index) of \(size) differs")
                        break
                    }
                    received += chunk.count
                    state.countChecked(chunk.count)
                }
                if case .completed = outcome, received != size {
                    outcome = .violated("chunks ended after \(received) of \(size) bytes, with no error")
                }
            } catch {
                state.heard(error)
                outcome = .failed("chunks: \(error)")
            }
            let closed = outcome
            file.close().onResult(on: .none) { result in
                if case .failure(let error) = result { state.heard("close: \(error)") }
                _ = emptyAndRemove(directory)
                state.finish(closed)
                state.closing.leave()
            }
        }
    }
}

// MARK: - UDP

/// One socket sends numbered datagrams to another, which sends each back; each one that comes back is
/// checked, and each that does not must be one whose send failed, with an error to its caller.
func datagramEcho(on loop: EventLoop, state: RunState) {
    let count = 100
    let size = 512
    let seed = state.seed
    let client: UDPSocket
    let server: UDPSocket
    do {
        client = try UDPSocket.bind(on: loop)
        do {
            server = try UDPSocket.bind(on: loop)
        } catch {
            state.closing.enter()
            client.close().always(on: .none) { state.closing.leave() }
            throw error
        }
    } catch {
        state.finish(.failed("bind: \(error)"))
        return
    }
    state.closing.enter()
    state.closing.enter()
    // Loop context only.
    final class Tally: @unchecked Sendable {
        // @unchecked Sendable: used on the loop only (the sockets' handlers and the sends' callbacks,
        // all on `loop.scheduler`).
        var seen = Set<Int>()
        var lostToFailedSends = 0
        var isDone = false
    }
    let tally = Tally()
    let finishIfAccounted: @Sendable () -> Void = {
        guard !tally.isDone, tally.seen.count + tally.lostToFailedSends == count else { return }
        tally.isDone = true
        if tally.lostToFailedSends == 0 {
            state.finish(.completed)
        } else {
            state.finish(.failed("\(tally.lostToFailedSends) datagrams not echoed (\(state.heardErrors.first ?? "?"))"))
        }
        client.close().always(on: .none) { state.closing.leave() }
        server.close().always(on: .none) { state.closing.leave() }
    }
    server.onReceive { datagram in
        server.send(datagram.bytes, to: datagram.sender).onResult(on: loop.scheduler) { result in
            if case .failure(let error) = result {
                state.heard("echo send: \(error)")
                tally.lostToFailedSends += 1
                finishIfAccounted()
            }
        }
    }
    server.onReceiveError { state.heard("server receive: \($0)") }
    client.onReceiveError { state.heard("client receive: \($0)") }
    client.onReceive { datagram in
        let bytes = datagram.bytes
        guard bytes.count == size else {
            state.finish(.violated("a datagram of \(bytes.count) bytes, not \(size)"))
            return
        }
        let number = Int(bytes[0]) | Int(bytes[1]) << 8
        let expected = datagramBytes(number, size: size, seed: seed)
        if bytes != expected {
            state.finish(.violated("datagram \(number) came back changed"))
        } else if !tally.seen.insert(number).inserted {
            state.finish(.violated("datagram \(number) came back twice"))
        } else {
            state.countChecked(size)
        }
        finishIfAccounted()
    }
    let destination = server.localAddress
    @Sendable func sendNext(_ number: Int) {
        guard number < count, !tally.isDone else { return }
        client.send(datagramBytes(number, size: size, seed: seed), to: destination)
            .onResult(on: loop.scheduler) { result in
                if case .failure(let error) = result {
                    state.heard("send: \(error)")
                    tally.lostToFailedSends += 1
                    finishIfAccounted()
                }
                sendNext(number + 1)
            }
    }
    sendNext(0)
}

func datagramBytes(_ number: Int, size: Int, seed: UInt64) -> [UInt8] {
    [UInt8(truncatingIfNeeded: number), UInt8(truncatingIfNeeded: number >> 8)]
        + (2..<size).map { patternByte(seed: seed &+ UInt64(number), offset: $0) }
}

// MARK: - A child process

/// Runs this program as `cat`, writing bytes to its input and checking its output.
func childOutput(on loop: EventLoop, state: RunState) {
    let length = childInputLength
    let input = withUnsafeBytes(of: UInt64(length).littleEndian, Array.init) + pattern(seed: state.seed, count: length)
    let executable = String(decoding: readLink("/proc/self/exe"), as: UTF8.self)
    state.closing.enter()
    ChildProcess.run(executable, arguments: ["cat"], input: input, on: loop).onResult(on: .none) { result in
        defer { state.closing.leave() }
        switch result {
        case .failure(let error):
            state.heard(error)
            state.finish(.failed("run: \(error)"))
        case .success(let output) where output.standardOutput == input:
            state.countChecked(input.count)
            state.finish(output.termination.isSuccess ? .completed : .failed("the child ended: \(output.termination)"))
        case .success(let output):
            // The child's input or output pipe failed on this side: it must have said so.
            if output.termination.isSuccess {
                state.failOrViolate("the child's output was \(output.standardOutput.count) bytes of \(input.count)")
            } else {
                state.finish(.failed("the child ended: \(output.termination)"))
            }
        }
    }
}

func readLink(_ path: String) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = readlink(path, &buffer, buffer.count)
    return Array(buffer.prefix(max(count, 0)))
}

// MARK: - Name resolution

/// Resolves `localhost` through the C library's resolver on libuv's thread pool.
func nameLookup(on loop: EventLoop, state: RunState) {
    state.closing.enter()
    NameResolver.resolve(host: "localhost", service: "80", on: loop).onResult(on: .none) { result in
        defer { state.closing.leave() }
        switch result {
        case .failure(let error):
            state.heard(error)
            state.finish(.failed("resolve: \(error)"))
        case .success(let addresses) where addresses.contains(where: { $0.host == "127.0.0.1" || $0.host == "::1" }):
            state.finish(.completed)
        case .success(let addresses):
            state.finish(.violated("localhost resolved to \(addresses)"))
        }
    }
}

// MARK: - HTTP through HTTPHello's parser

/// How many pipelined requests an HTTP run sends.
let httpRequests = 200

/// The body length of request `index` in a run with `seed`.
func httpBodyLength(_ index: Int, seed: UInt64) -> Int { (index * 37 + Int(seed % 1000)) % 3000 }

/// The answer to request `index`, whose head said `contentLength`: its numbers, fixed-width.
func httpResponse(_ index: Int, contentLength: Int) -> [UInt8] {
    func digits(_ value: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 8 - text.count)) + text
    }
    return Array("HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n\(digits(index))\(digits(contentLength))".utf8)
}

/// A server parsing requests with HTTPRequestParser answers each; it closes after the one that asks.
func serveHTTP(_ connection: StreamConnection, state: RunState) {
    state.closing.enter()
    state.accepted()
    let isClosing = Mutex(false)
    let close: @Sendable () -> Void = {
        guard !isClosing.withLock({ let was = $0; $0 = true; return was }) else { return }
        connection.close().always(on: .none) { state.closing.leave() }
    }
    var parser = HTTPRequestParser()
    var answered = 0
    connection.onRead { event in
        switch event {
        case .bytes(let bytes):
            var isLast = false
            do {
                try parser.consume(bytes) { head in
                    connection.send(SharedBytes(httpResponse(answered, contentLength: head.contentLength))) { error in
                        if let error {
                            state.heard("server write: \(error)")
                            close()
                        }
                    }
                    answered += 1
                    isLast = !head.keepsAlive
                    return !isLast
                }
            } catch {
                state.heard("server parse: \(error)")
                close()
                return
            }
            if isLast { connection.shutdown().always(on: .none) { close() } }
        case .endOfStream:
            connection.shutdown().always(on: .none) { close() }
        case .failed(let error):
            state.heard("server read: \(error)")
            close()
        }
    }
}

/// A client sends pipelined requests with bodies over TCP, and checks the answers byte by byte.
func httpExchange(on loop: EventLoop, state: RunState) {
    let seed = state.seed
    let listener: TCPListener
    do {
        listener = try TCPListener.listen(host: "127.0.0.1", port: 0, on: loop) { serveHTTP($0, state: state) }
    } catch {
        state.finish(.failed("listen: \(error)"))
        return
    }
    var requests: [UInt8] = []
    var expected: [UInt8] = []
    for index in 0..<httpRequests {
        let length = httpBodyLength(index, seed: seed)
        let closing = index == httpRequests - 1 ? "Connection: close\r\n" : ""
        requests += Array("POST / HTTP/1.1\r\nHost: flow\r\nContent-Length: \(length)\r\n\(closing)\r\n".utf8)
        requests += pattern(seed: seed &+ UInt64(index), count: length)
        expected += httpResponse(index, contentLength: length)
    }
    let answers = expected
    let requestBytes = SharedBytes(requests)
    state.closing.enter()   // the listener
    let hasEnded = Mutex(false)
    let end: @Sendable (Outcome?, StreamConnection?) -> Void = { outcome, connection in
        guard !hasEnded.withLock({ let was = $0; $0 = true; return was }) else { return }
        loop.execute {
            let accepts = listener.failedAcceptCount
            if accepts > 0 { state.heard("\(accepts) failed accepts") }
            if let outcome { state.finish(outcome) } else { state.failOrViolate("the answers ended early") }
            connection?.close().always(on: .none) { state.closing.leave() }
            listener.close().always(on: .none) { state.closing.leave() }
        }
    }
    TCPConnection.connect(host: "127.0.0.1", port: listener.port, on: loop).onResult(on: loop.scheduler) { result in
        let connection: TCPConnection
        switch result {
        case .failure(let error):
            state.heard(error)
            end(.failed("connect: \(error)"), nil)
            return
        case .success(let connected):
            connection = connected
        }
        state.closing.enter()   // the client's connection
        var received = 0
        var isDone = false
        connection.onRead { event in
            guard !isDone else { return }
            switch event {
            case .bytes(let bytes):
                for (index, byte) in bytes.enumerated() where received + index >= answers.count || byte != answers[received + index] {
                    isDone = true
                    end(.violated("answer byte \(received + index) of \(answers.count) differs"), connection)
                    return
                }
                received += bytes.count
                state.countChecked(bytes.count)
                if received == answers.count {
                    isDone = true
                    end(.completed, connection)
                }
            case .endOfStream:
                isDone = true
                end(nil, connection)
            case .failed(let error):
                isDone = true
                state.heard(error)
                end(.failed("client read: \(error)"), connection)
            }
        }
        connection.write(requestBytes).onResult(on: loop.scheduler) { result in
            if case .failure(let error) = result {
                state.heard("client write: \(error)")
                end(.failed("client write: \(error)"), connection)
            }
        }
    }
}
