import Flow
import FlowTimers
import Testing

/// The signal operators' and the debouncer's `.mainActor` forms, from `@MainActor` code in Swift 6 mode:
/// each callback reads or writes captured main-actor `var`s (no box, no `MainActor.assumeIsolated`), and
/// each records whether it ran on the main loop, though the values are signalled from another loop's
/// thread.
@MainActor
@Suite("Swift 6 signal operators and debouncers keep the main actor")
struct MainActorOperatorTests {
    @Test func signalOperatorsUpdateMainActorState() async throws {
        let log = MainActorLog()
        var calls: [String: Int] = [:]   // how often each operator's callback ran: captured main-actor state
        var everyCallWasOnTheMainLoop = true
        func called(_ name: String) {
            calls[name, default: 0] += 1
            everyCallWasOnTheMainLoop = everyCallWasOnTheMainLoop && Scheduler.main.isExecuting
        }
        let loop = EventLoop.startOnNewThread(name: "test.swift6.operators")
        defer { loop.shutdown() }
        let callbacker = Callbacker<Int>()
        let values = Signal(callbacker: callbacker)
        let bag = DisposeBag()
        defer { bag.dispose() }
        bag += values.reduce(on: .mainActor, 0) { sum, value in
            called("reduce")
            return sum + value
        }.onValue(on: .mainActor) { log.append("sum \($0)") }
        bag += values.contains(on: .mainActor) { value in
            called("contains")
            return value == 2
        }.onValue(on: .mainActor) { log.append("contains \($0)") }
        bag += values.allSatisfy(on: .mainActor) { value in
            called("allSatisfy")
            return value < 3
        }.onValue(on: .mainActor) { log.append("allSatisfy \($0)") }
        bag += values.skip(on: .mainActor) { value in
            called("skip")
            return value == 2
        }.onValue(on: .mainActor) { log.append("skip \($0)") }
        bag += values.distinct(on: .mainActor) { before, value in
            called("distinct")
            return before == value
        }.onValue(on: .mainActor) { log.append("distinct \($0)") }
        bag += values.delay(on: .mainActor) { value -> Double? in
            called("delay")
            return value == 3 ? 0.001 : nil
        }.onValue(on: .mainActor) { log.append("delay \($0)") }
        bag += values.onValueDisposePrevious(on: .mainActor) { value -> Disposable? in
            called("onValueDisposePrevious")
            log.append("disposePrevious \(value)")
            return nil
        }

        // Signalled from another loop's thread: every callback still runs on the main loop.
        await loop.perform { for value in [1, 1, 2, 2, 3] { callbacker.callAll(with: value) } }
        await log.waitForEntries(31)
        func outputs(_ name: String) -> [String] {
            log.entries.filter { $0.hasPrefix(name + " ") }.map { String($0.dropFirst(name.count + 1)) }
        }
        #expect(outputs("sum") == ["1", "2", "4", "6", "9"])
        #expect(outputs("contains") == ["false", "false", "true", "true", "true"])
        #expect(outputs("allSatisfy") == ["true", "true", "true", "true", "false"])
        #expect(outputs("skip") == ["2", "2", "3"])
        #expect(outputs("distinct") == ["1", "2", "3"])
        #expect(outputs("delay") == ["1", "1", "2", "2", "3"])
        #expect(outputs("disposePrevious") == ["1", "1", "2", "2", "3"])
        // skip and contains ask until their predicate accepts (1, 1, 2); distinct compares each value
        // after the first.
        #expect(calls == [
            "reduce": 5, "contains": 3, "allSatisfy": 5, "skip": 3, "distinct": 4, "delay": 5,
            "onValueDisposePrevious": 5,
        ])
        #expect(everyCallWasOnTheMainLoop)
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func finiteSignalHooksUpdateMainActorState() async throws {
        let log = MainActorLog()
        var endsSeen = 0   // captured main-actor state
        let loop = EventLoop.startOnNewThread(name: "test.swift6.finite-hooks")
        defer { loop.shutdown() }
        let events = Callbacker<Event<Int>>()
        let bag = DisposeBag()
        defer { bag.dispose() }
        bag += FiniteSignal(callbacker: events)
            .atEvent(on: .mainActor) { event in log.append(event.isEnd ? "atEvent end" : "atEvent value") }
            .atEnd(on: .mainActor) {
                endsSeen += 1
                log.append("atEnd")
            }
            .atError(on: .mainActor) { _ in log.append("atError") }
            .onEvent(on: .mainActor) { event in log.append(event.isEnd ? "onEvent end" : "onEvent value") }
        // Signalled from another loop's thread: the hooks still run on the main loop.
        await loop.perform {
            events.callAll(with: .value(5))
            events.callAll(with: .end(TestFailure.once))
        }
        await log.waitForEntries(6)
        #expect(log.entries == ["atEvent value", "onEvent value", "atEvent end", "atEnd", "atError", "onEvent end"])
        #expect(endsSeen == 1)
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    /// Main-actor state the debounced work reads when it finally runs.
    @MainActor enum SearchField {
        static var query = ""
    }

    @Test func aDebouncersMainActorWorkUpdatesMainActorState() async throws {
        var searches: [String] = []   // captured main-actor state
        let search = Debouncer<String>(on: .mainActor, interval: 0.001)
        SearchField.query = "f"
        let first = search(on: .mainActor) {
            searches.append(SearchField.query)
            return Future(SearchField.query)
        }
        SearchField.query = "fl"
        let second = search(on: .mainActor) {
            searches.append(SearchField.query)
            return Future(SearchField.query)
        }
        // Both calls came within one quiet period: the work runs once, and both get its result.
        #expect(try await first.get() == "fl")
        #expect(try await second.get() == "fl")
        #expect(searches == ["fl"])

        // Timed on another loop, the work still runs on the main loop, as the main actor.
        let worker = EventLoop.startOnNewThread(name: "test.swift6.debouncer")
        defer { worker.shutdown() }
        let onWorker = Debouncer<Bool>(on: worker.scheduler, interval: 0.001)
        let ranOnTheMainLoop = try await onWorker(on: .mainActor) {
            searches.append("from the worker's timer")
            return Future(Scheduler.main.isExecuting)
        }.get()
        #expect(ranOnTheMainLoop)
        #expect(searches == ["fl", "from the worker's timer"])
    }
}
