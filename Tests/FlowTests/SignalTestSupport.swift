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

/// Counts instances of ``Tracked`` alive: captured in closures, they show whether the closures were
/// released.
final class LiveObjects: Sendable {
    let count = Atomic<Int>(0)

    var alive: Int { count.load(ordering: .acquiring) }

    func make() -> Tracked { Tracked(self) }
}

/// An object whose life is counted by its ``LiveObjects``.
final class Tracked: Sendable {
    let owner: LiveObjects

    init(_ owner: LiveObjects) {
        self.owner = owner
        owner.count.add(1, ordering: .relaxed)
    }

    func touch() {}

    deinit { owner.count.subtract(1, ordering: .releasing) }
}

/// The loop the signal tests run their bodies on, so that `Scheduler.current` is a loop, as in a
/// program: listeners registered there get their values at once when sent there.
let signalTestLoop = EventLoop.startOnNewThread(name: "signal.tests")

/// Runs `body` on ``signalTestLoop`` and returns its result.
func onSignalLoop<T>(_ body: () -> T) -> T {
    signalTestLoop.scheduler.sync(execute: body)
}

/// Reads how many values an event carries, for the compact event logs of the tests.
func describe<Value>(_ event: Event<Value>) -> String {
    switch event {
    case .value(let value): return "\(value)"
    case .end(nil): return "end"
    case .end(let error?): return "end(\(error))"
    }
}
