import BenchmarkSupport
import Dispatch
import Flow
import OpenCombine

// P12: signals against OpenCombine's PassthroughSubject and an AsyncStream, in a program of its own so
// that P1-P11 build without OpenCombine.
//
//   SignalBenchmarks <workload> <implementation>     e.g. SignalBenchmarks P12 flow

/// A value sink the callbacks add to: they capture nothing, so a callback costs no allocation of its own.
enum Sink {
    nonisolated(unsafe) static var total = 0
    nonisolated(unsafe) static var count = 0
}

enum SignalWorkloads {
    // MARK: P12: one signal, one listener, 1M values on the loop

    static func flowSingle(_ reporter: Reporter) {
        reporter.measure("ns/value", operations: 1_000_000) { count, stopwatch in
            Sink.count = 0
            onNewLoop { _ in
                let callbacker = Callbacker<Int>()
                let listener = Signal(callbacker: callbacker).onValue { value in
                    Sink.total &+= value
                    Sink.count &+= 1
                }
                callbacker.callAll(with: 0)  // the steady state: everything set up
                stopwatch.start()
                for value in 1..<count { callbacker.callAll(with: value) }
                stopwatch.stop()
                listener.dispose()
            }
            guard Sink.count == count else { fatalError("P12 flow: lost values") }
        }
    }

    static func combineSingle(_ reporter: Reporter) {
        reporter.measure("ns/value", operations: 1_000_000) { count, stopwatch in
            Sink.count = 0
            let subject = PassthroughSubject<Int, Never>()
            let subscription = subject.sink { value in
                Sink.total &+= value
                Sink.count &+= 1
            }
            subject.send(0)
            stopwatch.start()
            for value in 1..<count { subject.send(value) }
            stopwatch.stop()
            subscription.cancel()
            guard Sink.count == count else { fatalError("P12 combine: lost values") }
        }
    }

    static func asyncStreamSingle(_ reporter: Reporter) {
        reporter.measure("ns/value", operations: 1_000_000) { count, stopwatch in
            let (stream, continuation) = AsyncStream.makeStream(of: Int.self)
            let done = DispatchSemaphore(value: 0)
            let consumer = Task {
                var received = 0
                for await value in stream {
                    Sink.total &+= value
                    received += 1
                }
                Sink.count = received
                done.signal()
            }
            continuation.yield(0)
            stopwatch.start()
            for value in 1..<count { continuation.yield(value) }
            continuation.finish()
            done.wait()
            stopwatch.stop()
            _ = consumer
            guard Sink.count == count else { fatalError("P12 AsyncStream: lost values") }
        }
    }

    // MARK: P12-fanout: one signal, 100 listeners, 100k values

    static let fanOutListeners = 100

    static func flowFanOut(_ reporter: Reporter) {
        reporter.measure("ns/delivery", operations: 100_000 * fanOutListeners, countingOperations: 10_000 * fanOutListeners) {
            deliveries, stopwatch in
            let values = deliveries / fanOutListeners
            Sink.count = 0
            onNewLoop { _ in
                let callbacker = Callbacker<Int>()
                let signal = Signal(callbacker: callbacker)
                let listeners = (0..<fanOutListeners).map { _ in
                    signal.onValue { value in
                        Sink.total &+= value
                        Sink.count &+= 1
                    }
                }
                stopwatch.start()
                for value in 0..<values { callbacker.callAll(with: value) }
                stopwatch.stop()
                for listener in listeners { listener.dispose() }
            }
            guard Sink.count == deliveries else { fatalError("P12-fanout flow: lost values") }
        }
    }

    static func combineFanOut(_ reporter: Reporter) {
        reporter.measure("ns/delivery", operations: 100_000 * fanOutListeners, countingOperations: 10_000 * fanOutListeners) {
            deliveries, stopwatch in
            let values = deliveries / fanOutListeners
            Sink.count = 0
            let subject = PassthroughSubject<Int, Never>()
            let subscriptions = (0..<fanOutListeners).map { _ in
                subject.sink { value in
                    Sink.total &+= value
                    Sink.count &+= 1
                }
            }
            stopwatch.start()
            for value in 0..<values { subject.send(value) }
            stopwatch.stop()
            for subscription in subscriptions { subscription.cancel() }
            guard Sink.count == deliveries else { fatalError("P12-fanout combine: lost values") }
        }
    }

    // MARK: P12-memory: bytes per idle listener

    static let idleListeners = 100_000

    static func flowMemory(_ reporter: Reporter) {
        nonisolated(unsafe) let reporter = reporter  // used on the loop while this thread waits in run()
        onNewLoop { _ in
            let callbacker = Callbacker<Int>()
            let signal = Signal(callbacker: callbacker)
            // One listener first: what is made once per type or per callbacker (type metadata, the
            // callbacker's weak-reference side table) is not counted per listener.
            signal.onValue { value in Sink.total &+= value }.dispose()
            var listeners: [Disposable] = []
            listeners.reserveCapacity(idleListeners)
            let growth = measureHeapGrowth {
                for _ in 0..<idleListeners {
                    listeners.append(signal.onValue { value in Sink.total &+= value })
                }
            }
            reporter.recordHeapGrowth(growth, per: "listener", count: idleListeners)
            callbacker.callAll(with: 1)
            for listener in listeners { listener.dispose() }
        }
    }

    static func combineMemory(_ reporter: Reporter) {
        PassthroughSubject<Int, Never>().sink { value in Sink.total &+= value }.cancel()  // as for Flow's
        let subject = PassthroughSubject<Int, Never>()
        var subscriptions: [AnyCancellable] = []
        subscriptions.reserveCapacity(idleListeners)
        let growth = measureHeapGrowth {
            for _ in 0..<idleListeners {
                subscriptions.append(subject.sink { value in Sink.total &+= value })
            }
        }
        reporter.recordHeapGrowth(growth, per: "listener", count: idleListeners)
        subject.send(1)
        for subscription in subscriptions { subscription.cancel() }
    }
}

runWorkloadFromCommandLine([
    "P12": [
        "flow": SignalWorkloads.flowSingle, "combine": SignalWorkloads.combineSingle,
        "asyncstream": SignalWorkloads.asyncStreamSingle,
    ],
    "P12-fanout": ["flow": SignalWorkloads.flowFanOut, "combine": SignalWorkloads.combineFanOut],
    "P12-memory": ["flow": SignalWorkloads.flowMemory, "combine": SignalWorkloads.combineMemory],
])
