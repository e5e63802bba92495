import Dispatch
import Flow
import FlowNet
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A generous bound on waits for things that take milliseconds: reached only by a broken test, so
/// that it fails instead of hanging.
let hangGuardSeconds = 30

/// A value shared between a test and the work it schedules, guarded by a mutex.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Synchronization.Mutex<Value>

    init(_ value: Value) { storage = Synchronization.Mutex(value) }

    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }

    @discardableResult
    func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// State a test keeps between the callbacks of its loop.
final class LoopState<Value>: @unchecked Sendable {
    // @unchecked Sendable: only touched on the test's loop, whose callbacks all run on the thread
    // inside `runLoop`.
    var value: Value

    init(_ value: Value) { self.value = value }
}

/// Runs `body` on a new loop on the calling thread, and returns once the loop's `run()` returns:
/// when every handle the test opened has been closed. A watchdog stops a loop still running after
/// ``hangGuardSeconds`` and records a failure.
func runLoop(
    _ name: String = "net.test", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable (EventLoop) -> Void
) throws {
    let loop = EventLoop(name: name)
    let isFinished = Shared(false)
    let timedOut = Shared(false)
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(hangGuardSeconds)) {
        guard !isFinished.value else { return }
        timedOut.value = true
        loop.stop()
    }
    loop.execute { body(loop) }
    try loop.run()
    isFinished.value = true
    #expect(!timedOut.value, "the loop still had open handles or pending work after \(hangGuardSeconds) s",
            sourceLocation: sourceLocation)
    try loop.close()
}

/// Repeats `step` on the loop until it returns false (each step returning a future to wait for).
func repeatOnLoop(_ step: @escaping @Sendable () -> Future<Bool>) {
    step().onValue { again in
        if again { repeatOnLoop(step) }
    }
}

/// Reads from `connection` with ``TCPConnection/read()`` until the end of the stream.
func readToEnd(_ connection: StreamConnection) -> Future<[UInt8]> {
    let received = LoopState<[UInt8]>([])
    return Future<[UInt8]> { completion in
        @Sendable func next() {
            connection.read().onResult { result in
                switch result {
                case .success(let chunk?):
                    received.value += chunk
                    next()
                case .success(nil):
                    completion(.success(received.value))
                case .failure(let error):
                    completion(.failure(error))
                }
            }
        }
        next()
        return NilDisposer()
    }
}

/// Whether this machine can bind a TCP socket to `::1`.
let hasIPv6Loopback: Bool = {
    let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_in6()
    address.sin6_family = sa_family_t(AF_INET6)
    address.sin6_addr = in6addr_loopback
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
        }
    }
}()

/// A blocking IPv4 client on 127.0.0.1, written against the C socket API so that it checks servers
/// independently of FlowNet. Every receive gives up after ``hangGuardSeconds``.
final class LoopbackClient {
    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: hangGuardSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
    }

    deinit {
        close(fd)
    }

    func send(_ text: String) {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            bytes = bytes.dropFirst(sent)
        }
    }

    /// Half-closes: the server reads the end of the stream.
    func shutdownWriting() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Receives until the server closes its side (or the timeout).
    func receiveToEnd() -> String {
        receive(until: { _ in false })
    }

    /// Receives until `isComplete` holds for what came so far, the server closes, or the timeout.
    func receive(until isComplete: (String) -> Bool) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !isComplete(String(decoding: received, as: UTF8.self)) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

/// An example program run as a child process, built next to the test bundle.
final class ExampleProcess {
    private let process = Process()
    private let output = Pipe()
    private var pendingOutput: [UInt8] = []

    init(_ name: String, arguments: [String]) throws {
        let testBinary = URL(
            fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let executable = testBinary.deletingLastPathComponent().appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: executable.path) else {
            throw ExampleError.notBuilt(executable.path)
        }
        process.executableURL = executable
        process.arguments = arguments
        // Under AddressSanitizer: no symbolizer holding the output pipe open, no leak check at exit
        // (an example killed mid-work is not leaking).
        var environment = ProcessInfo.processInfo.environment
        environment["ASAN_OPTIONS"] = (environment["ASAN_OPTIONS"].map { $0 + ":" } ?? "") + "symbolize=0:detect_leaks=0"
        process.environment = environment
        process.standardOutput = output
        try process.run()
        // A child that never prints would block `readLine` for good: end it after the hang guard.
        let pid = process.processIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(hangGuardSeconds)) { [process] in
            if process.isRunning { kill(pid, SIGKILL) }
        }
    }

    /// The program's process id.
    var processIdentifier: Int32 { process.processIdentifier }

    /// How many file descriptors the program has open (from `/proc/<pid>/fd`).
    var openDescriptorCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? -1
    }

    /// The next line the program printed, or `nil` if its output ended first.
    func readLine() -> String? {
        while true {
            if let newline = pendingOutput.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pendingOutput[..<newline], as: UTF8.self)
                pendingOutput.removeSubrange(...newline)
                return line
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { return nil }
            pendingOutput += data
        }
    }

    /// Waits for the program to exit by itself and returns its exit status.
    func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Sends `signal` to the program (the examples watch `SIGTERM` and `SIGINT` to stop gracefully).
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Ends the program and waits for it.
    ///
    /// With SIGKILL: a child started from a Dispatch worker thread inherits that thread's signal mask,
    /// in which SIGTERM is blocked, so `Process.terminate()` would not end it.
    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

enum ExampleError: Error, CustomStringConvertible {
    case notBuilt(String)

    var description: String {
        switch self {
        case .notBuilt(let path): "\(path) was not built; run `swift build --build-tests` first"
        }
    }
}

/// The port printed right after `prefix`, as in `EchoServer listening on 127.0.0.1:7000` or
/// `HTTPHello listening on 127.0.0.1:8080 with 2 loops`.
func listeningPort(in line: String, after prefix: String) -> Int? {
    guard line.hasPrefix(prefix) else { return nil }
    return Int(line.dropFirst(prefix.count).prefix { $0.isNumber })
}
