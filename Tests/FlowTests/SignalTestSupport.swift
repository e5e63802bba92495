import Dispatch
import Flow
import Synchronization
import Testing

/// What a listener saw, in order, guarded by a mutex: values are appended from whichever thread
/// delivers them.
final class Recorder<Element: Sendable>: Sendable {
    private let storage = Mutex<[Element]>([])

    func append(_ element: Element) { storage.withLock { $0.append(element) } }

    var elements: [Element] { storage.withLock { $0 } }
}

/// The loop the signal tests run their bodies on, so that `Scheduler.current` is a loop, as in a
/// program: listeners registered there get their values at once when sent there.
let signalTestLoop = EventLoop.startOnNewThread(name: "signal.tests")

/// A scheduler whose `sync` runs work on the calling thread, in its context, and whose `async` runs
/// work on a serial queue: a test body run with ``onTestScheduler(_:)`` is executing on it, so that
/// listeners registered there (with the default `.current`) get values sent there at once, and
/// Swift Testing still sees the body as the test's own code.
let testScheduler = Scheduler(
    identifyingObject: TestSchedulerIdentity.shared,
    async: { work in TestSchedulerIdentity.queue.async { work() } },
    sync: { work in work() })

private final class TestSchedulerIdentity: Sendable {
    static let shared = TestSchedulerIdentity()
    static let queue = DispatchQueue(label: "signal.tests.scheduler")
}

/// Runs `body` as work of ``testScheduler``, on the calling thread, and returns its result.
func onTestScheduler<T>(_ body: () -> T) -> T {
    testScheduler.sync(execute: body)
}

/// Reads how many values an event carries, for the compact event logs of the tests.
func describe<Value>(_ event: Event<Value>) -> String {
    switch event {
    case .value(let value): return "\(value)"
    case .end(nil): return "end"
    case .end(let error?): return "end(\(error))"
    }
}
