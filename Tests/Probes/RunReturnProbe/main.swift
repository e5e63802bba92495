// A program the tests start as a child process, to check that `EventLoop.main.run()` returns only once
// nothing will come back to the main loop (issue #38). Each scenario sends work from the main loop to
// somewhere else, work that delivers back, then runs the main loop; a round counts if the delivery was
// made before `run()` returned. Arguments: the scenario, the number of rounds, and `load` to run the
// rounds while two threads keep the processors busy.
import Dispatch
import Flow
import FlowNet
import FlowSystem
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Writes a line straight to standard output, so it is in the pipe even if the process then stops.
func say(_ line: String) {
    let text = line + "\n"
    _ = text.withCString { write(1, $0, strlen($0)) }
}

/// The values delivered back to the main loop, from whichever thread delivered them.
final class Deliveries: Sendable {
    private let values = Mutex<Set<Int>>([])
    func record(_ value: Int) { _ = values.withLock { $0.insert(value) } }
    func contains(_ value: Int) -> Bool { values.withLock { $0.contains(value) } }
}

/// Tells the load threads to stop.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func raise() { value.store(true, ordering: .relaxed) }
    var isRaised: Bool { value.load(ordering: .relaxed) }
}

/// What the work sent away does before it delivers back: long enough that a `run()` which does not
/// wait for it returns first.
func slowStep<Value>(_ value: Value) -> Value {
    usleep(1000)
    return value
}

let arguments = Array(CommandLine.arguments.dropFirst())
let scenario = arguments.first ?? ""
let rounds = arguments.count > 1 ? Int(arguments[1]) ?? 20 : 20
let isUnderLoad = arguments.contains("load")

// A run() that never returns would leave the test waiting for this process for ever.
Thread.detachNewThread {
    sleep(120)
    say("watchdog: \(scenario) did not finish in 120 s")
    exit(3)
}

let stopLoad = Flag()
if isUnderLoad {
    for _ in 0..<2 {
        Thread.detachNewThread {
            var spins = 0
            while !stopLoad.isRaised { spins &+= 1 }
        }
    }
}

/// A loop on a thread of its own, for the hops to another loop and the server of `lines`.
let otherLoop = EventLoop.startOnNewThread(name: "probe.other")

/// Writes two lines to each connection and closes it.
let linesServer = try TCPListener.listen(port: 0, on: otherLoop) { connection in
    connection.write("one\ntwo\n").onResult { _ in _ = connection.close() }
}

/// Sets up one round: sends work away from the main loop that will deliver `round` back to it.
typealias Round = (_ round: Int, _ deliveries: Deliveries) throws -> Void

let scenarios: [String: Round] = [
    // Flow's Signals guide: a transform on a background queue, its values observed on the main loop.
    "signalMapOnBackground": { round, deliveries in
        let signal = ReadWriteSignal(-1)
        let bag = DisposeBag()
        bag += signal.map(on: .concurrentBackground) { slowStep($0) }.onValue { deliveries.record($0) }
        signal.value = round
        try EventLoop.main.run()
        bag.dispose()
    },
    "futureMapOnBackground": { round, deliveries in
        Future(round).map(on: .concurrentBackground) { slowStep($0) }.onValue { deliveries.record($0) }
        try EventLoop.main.run()
    },
    // The second hop is made from the first one's work, off the main loop: it must hold the loop too.
    "futureHopsBetweenQueues": { round, deliveries in
        Future(round)
            .map(on: .background) { slowStep($0) }
            .map(on: .concurrentBackground) { slowStep($0) }
            .flatMap(on: .background) { value in Future(on: .concurrentBackground) { slowStep(value) } }
            .onValue { deliveries.record($0) }
        try EventLoop.main.run()
    },
    // A future made from an async operation: its task runs on Swift's executors.
    "futureFromAsyncOperation": { round, deliveries in
        Future { () async throws -> Int in
            try await Task.sleep(nanoseconds: 1_000_000)
            return round
        }.onValue { deliveries.record($0) }
        try EventLoop.main.run()
    },
    "futureMapOnAnotherLoop": { round, deliveries in
        Future(round).map(on: otherLoop.scheduler) { slowStep($0) }.onValue { deliveries.record($0) }
        try EventLoop.main.run()
    },
    "timerOnBackground": { round, deliveries in
        Scheduler.background.async(after: 0.001) {
            Scheduler.main.async { deliveries.record(round) }
        }
        try EventLoop.main.run()
    },
    // A timer cancelled before it fires holds the loop no longer: run() returns at once, not in a minute.
    "cancelledTimerOnBackground": { round, deliveries in
        let timer = Scheduler.background.async(after: 60) {
            Scheduler.main.async { deliveries.record(-1) }
        }
        Scheduler.main.async(after: 0.001) {
            timer.dispose()
            deliveries.record(round)
        }
        try EventLoop.main.run()
    },
    "performFromMainActor": { round, deliveries in
        Task { @MainActor in
            let value = await otherLoop.perform { slowStep(round) }
            deliveries.record(value)
        }
        try EventLoop.main.run()
    },
    // An async entry point of FlowNet, whose work runs on another loop.
    "bindAsyncFromMainActor": { round, deliveries in
        Task { @MainActor in
            let socket = try await UDPSocket.bindAsync(host: "127.0.0.1", port: 0, on: otherLoop)
            _ = socket.close()
            deliveries.record(round)
        }
        try EventLoop.main.run()
    },
    // A file opened on another loop, its chunks read in a main-actor task (the reads run on that
    // loop's thread pool).
    "fileChunksFromMainActor": { round, deliveries in
        Task { @MainActor in
            let file = try await FileSystem.open("/etc/passwd", on: otherLoop).get()
            var byteCount = 0
            for try await chunk in file.chunks() { byteCount += chunk.count }
            _ = try await file.close().get()
            if byteCount > 0 { deliveries.record(round) }
        }
        try EventLoop.main.run()
    },
    "deferredOnBackground": { round, deliveries in
        sendDeferredRound(round, deliveries)
        try EventLoop.main.run()
    },
    "deferredValueFromMainActor": { round, deliveries in
        sendDeferredValueRound(round, deliveries)
        try EventLoop.main.run()
    },
    // A listener opened on another loop from a main-actor task: the task waits in listenAsync.
    "listenAsyncFromMainActor": { round, deliveries in
        Task { @MainActor in
            let listener = try await TCPListener.listenAsync(port: 0, on: otherLoop) { $0.close() }
            _ = listener.close()
            deliveries.record(round)
        }
        try EventLoop.main.run()
    },
    // A server as structured tasks on another loop, its connections taken by a main-actor task: the
    // task waits in listenForConnections, then for the next element of `connections`.
    "connectionsFromMainActor": { round, deliveries in
        Task { @MainActor in
            let server = try await TCPListener.listenForConnections(port: 0, on: otherLoop)
            let client = TCPConnection.connect(host: "127.0.0.1", port: server.port, on: otherLoop)
            var taken = 0
            for await connection in server.connections {
                taken += 1
                _ = connection.close()
                break
            }
            _ = server.close()
            _ = try await client.get().close()
            if taken == 1 { deliveries.record(round) }
        }
        try EventLoop.main.run()
    },
    // A UDP socket's datagrams taken by a main-actor task until the socket, on another loop, closes:
    // the task waits for the sequence's end, then cleans up after its loop.
    "datagramsUntilSocketCloses": { round, deliveries in
        Task { @MainActor in
            let socket = try await UDPSocket.bindAsync(on: otherLoop)
            let sender = try await UDPSocket.bindAsync(on: otherLoop)
            let datagrams = socket.datagrams
            try await sender.sendAsync(Array("one".utf8), to: socket.localAddress)
            var received: [String] = []
            for await datagram in datagrams {
                received.append(String(decoding: datagram.bytes, as: UTF8.self))
                _ = socket.close()
            }
            _ = sender.close()
            if received == ["one"] { deliveries.record(round) }
        }
        try EventLoop.main.run()
    },
    // The README's loop with an idle timeout: lines read until the server closes the connection.
    "timedLinesUntilServerCloses": { round, deliveries in
        let port = linesServer.port
        Task { @MainActor in
            let connection = try await TCPConnection.connect(host: "127.0.0.1", port: port, on: .main).get()
            var lines: [String] = []
            for try await line in connection.lines(idleTimeout: 30) { lines.append(line) }
            _ = connection.close()
            if lines == ["one", "two"] { deliveries.record(round) }
        }
        try EventLoop.main.run()
    },
    // The README's loop: a main-actor task reads lines until the server closes the connection, then
    // cleans up after its loop.
    "linesUntilServerCloses": { round, deliveries in
        let port = linesServer.port
        Task { @MainActor in
            let connection = try await TCPConnection.connect(host: "127.0.0.1", port: port, on: .main).get()
            var lines: [String] = []
            for try await line in connection.lines() { lines.append(line) }
            _ = connection.close()
            if lines == ["one", "two"] { deliveries.record(round) }
        }
        try EventLoop.main.run()
    },
]

guard let setUp = scenarios[scenario] else {
    say("unknown scenario \(scenario); known: \(scenarios.keys.sorted())")
    exit(2)
}

let deliveries = Deliveries()
var deliveredInTime = 0
for round in 0..<rounds {
    try setUp(round, deliveries)
    if deliveries.contains(round) { deliveredInTime += 1 }
}
stopLoad.raise()
say("\(scenario): \(deliveredInTime) of \(rounds) delivered before run() returned")
exit(0)
