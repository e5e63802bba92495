// A program that commits one misuse of the matrix (Docs/MisuseMatrix.md) and must stop with its
// message. The tests run it built in debug and, in CI, built in release (`swift build -c release
// --product MisuseProbe`), where `precondition` would drop the message: see MisuseMessageTests.
//
//     MisuseProbe <case>        MisuseProbe --list
import Deferred
import Dispatch
import Flow
import FlowMetrics
import FlowNet

#if canImport(Glibc)
import Glibc
#endif

/// Each case of the matrix that stops the program, by name.
let misuses: [(name: String, commit: () -> Void)] = [
    ("mustFillTwice", {
        let deferred = Deferred<Int>()
        deferred.mustFill(with: 1)
        deferred.mustFill(with: 2)
    }),
    ("executeOnClosedLoop", {
        let loop = EventLoop(name: "probe.closed")
        try? loop.close()
        loop.execute { print("must not run") }
    }),
    ("shutdownOnTheLoopThread", {
        let loop = EventLoop.startOnNewThread(name: "probe.shutdown")
        loop.scheduler.sync { loop.shutdown() }
    }),
    ("waitOnTheLoopThread", {
        let loop = EventLoop.startOnNewThread(name: "probe.wait")
        let deferred = Deferred<Int>()
        loop.scheduler.sync { _ = deferred.wait(until: .distantFuture) }
    }),
    ("syncCycleBetweenLoops", {
        // The main thread counts as the main loop's context: it waits here for 'probe.other', whose
        // work then waits for the main loop.
        let other = EventLoop.startOnNewThread(name: "probe.other")
        print(other.scheduler.sync { Scheduler.main.sync { 42 } })
    }),
    ("nanLoopDelay", { EventLoop(name: "probe.delay").execute(after: .nan) {} }),
    ("infiniteLoopDelay", { EventLoop(name: "probe.delay").execute(after: .infinity) {} }),
    ("negativeInfiniteLoopDelay", { EventLoop(name: "probe.delay").execute(after: -.infinity) {} }),
    ("infiniteSchedulerDelay", { Scheduler.background.async(after: .infinity) {} }),
    ("nanFutureDelay", { Flow.Future(1).delay(by: .nan) }),
    ("negativeMaxRepetitions", {
        Flow.Future<Int>(error: FutureError.aborted).onErrorRepeat(maxRepetitions: -1)
    }),
    ("zeroConcurrencyQueue", { _ = FutureQueue(maxConcurrentCount: 0) }),
    ("selectBetweenNothing", { _ = select(between: [Flow.Future<Int>]()) }),
    ("signalSendFromCleanUp", {
        let signal = Signal<Int> { callback in Disposer { callback(1) } }
        signal.onValue(on: .none) { _ in }.dispose()
    }),
    ("negativeTake", { _ = Signal<Int>().take(first: -1) }),
    ("negativeDebounce", { _ = Signal<Int>().debounce(on: .none, -1) }),
    // The main thread always counts as inside the main loop: these used to reach libuv's freed state.
    ("udpSendOnClosedMainLoop", {
        let socket = try! UDPSocket.bind(on: .main)
        try! EventLoop.main.close()
        socket.send(Array("lost".utf8), to: socket.localAddress)
    }),
    ("udpCloseOnClosedMainLoop", {
        let socket = try! UDPSocket.bind(on: .main)
        try! EventLoop.main.close()
        socket.close()
    }),
    ("listenerGroupWithoutLoops", {
        _ = try? TCPListenerGroup.listen(port: 0, loops: []) { _ in }
    }),
    ("bindOnALoopNotRunning", {
        let loop = EventLoop(name: "probe.idle")
        _ = try? UDPSocket.bind(on: loop)
    }),
    ("tcpSendOnClosedMainLoop", {
        let listener = try! TCPListener.listen(port: 0, on: .main) { _ in }
        let connection = try! EventLoop.main.run(until: TCPConnection.connect(to: listener.localAddress, on: .main))
        try! EventLoop.main.close()
        connection.send(SharedBytes("lost"))
    }),
    ("closeGracefullyWithNaN", {
        let listener = try! TCPListener.listen(port: 0, on: .main) { _ in }
        listener.closeGracefully(deadline: .nan)
    }),
    ("closeGracefullyWithNegativeDeadline", {
        let listener = try! TCPListener.listen(port: 0, on: .main) { _ in }
        listener.closeGracefully(deadline: -1)
    }),
    ("metricsEveryInfinity", { _ = FlowMetrics.start(for: EventLoop(name: "probe.metrics"), every: .infinity) }),
    ("metricsEveryNaN", { _ = FlowMetrics.start(for: EventLoop(name: "probe.metrics"), every: .nan) }),
    ("metricsEveryHugeInterval", { _ = FlowMetrics.start(for: EventLoop(name: "probe.metrics"), every: 1e20) }),
    ("negativeFrameMaximum", {
        let listener = try! TCPListener.listen(port: 0, on: .main) { _ in }
        let connection = try! EventLoop.main.run(until: TCPConnection.connect(to: listener.localAddress, on: .main))
        _ = connection.frames(lengthPrefix: .uint32BigEndian, maximumLength: -1)
    }),
]

let requested = CommandLine.arguments.dropFirst().first ?? "--list"
if requested == "--list" {
    for misuse in misuses { print(misuse.name) }
    exit(0)
}
guard let misuse = misuses.first(where: { $0.name == requested }) else {
    print("MisuseProbe: no case '\(requested)'; --list lists them")
    exit(2)
}
misuse.commit()
print("MisuseProbe: '\(requested)' did not stop the program")
exit(3)
