import Flow
import Testing

/// The `.mainActor` forms of `take(while:)`, the write hooks, the latest-value flattenings, the
/// ordered callbacker and the remaining future and sequence helpers, from `@MainActor` code in Swift 6
/// mode: each callback reads or writes captured main-actor `var`s (no box, no `MainActor.assumeIsolated`),
/// and records whether it ran on the main loop, though the values come from another loop's thread.
@MainActor
@Suite("Swift 6 take(while:), write hooks, latest-value flattening and ordered callbacks keep the main actor")
struct MainActorLatestAndOrderedTests {
    @Test func takeWhilesPredicateReadsMainActorState() async throws {
        let log = MainActorLog()
        let limit = 3   // main-actor state the predicate reads
        var asked: [Int] = []   // and writes
        let loop = EventLoop.startOnNewThread(name: "test.swift6.take-while")
        defer { loop.shutdown() }
        let callbacker = Callbacker<Int>()
        let bag = DisposeBag()
        defer { bag.dispose() }
        bag += Signal(callbacker: callbacker)
            .take(on: .mainActor) { value in
                asked.append(value)
                log.append("asked \(value)")
                return value < limit
            }
            .onEvent(on: .mainActor) { event in log.append(event.isEnd ? "end" : "value \(event.value ?? -1)") }
        // Signalled from another loop's thread: the predicate still runs on the main loop, in order.
        await loop.perform { for value in 1...5 { callbacker.callAll(with: value) } }
        await log.waitForEntries(6)
        #expect(log.entries == ["asked 1", "value 1", "asked 2", "value 2", "asked 3", "end"])
        #expect(asked == [1, 2, 3])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func aThrowingMapUpdatesMainActorStateAndEndsWithItsError() async throws {
        struct NotANumber: Error, Equatable { let text: String }
        let log = MainActorLog()
        var total = 0   // captured main-actor state
        let loop = EventLoop.startOnNewThread(name: "test.swift6.throwing-map")
        defer { loop.shutdown() }
        let callbacker = Callbacker<String>()
        let bag = DisposeBag()
        defer { bag.dispose() }
        bag += Signal(callbacker: callbacker)
            .map(on: .mainActor) { text -> Int in
                guard let number = Int(text) else { throw NotANumber(text: text) }
                total += number
                return number
            }
            .onEvent(on: .mainActor) { event in
                switch event {
                case .value(let number): log.append("value \(number)")
                case .end(let error): log.append("end \((error as? NotANumber)?.text ?? "-")")
                }
            }
        // Signalled from another loop's thread: the transform still runs on the main loop, and the
        // signal ends at its first error.
        await loop.perform { for text in ["1", "2", "three", "4"] { callbacker.callAll(with: text) } }
        await log.waitForEntries(3)
        #expect(log.entries == ["value 1", "value 2", "end three"])
        #expect(total == 3)
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func writeHooksUpdateMainActorState() async throws {
        let log = MainActorLog()
        var written: [Int] = []   // captured main-actor state
        let loop = EventLoop.startOnNewThread(name: "test.swift6.write-hooks")
        defer { loop.shutdown() }
        let count = ReadWriteSignal(0)
            .willWrite(on: .mainActor) { value in log.append("will write \(value)") }
            .didWrite(on: .mainActor) { value in
                written.append(value)
                log.append("did write \(value)")
            }
        // Written on another loop's thread: the hooks run on the main loop, in the order written.
        await loop.perform {
            count.value = 1
            count.value = 2
        }
        await log.waitForEntries(4)
        #expect(log.entries == ["will write 1", "did write 1", "will write 2", "did write 2"])
        #expect(written == [1, 2])
        #expect(count.value == 2)
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func latestValueFlatteningsUpdateMainActorState() async throws {
        let log = MainActorLog()
        Rooms.messages = ["lobby": "welcome", "kitchen": "soup"]   // main-actor state the transforms read
        var transformed = 0
        let loop = EventLoop.startOnNewThread(name: "test.swift6.latest")
        defer { loop.shutdown() }
        let bag = DisposeBag()
        defer { bag.dispose() }

        // A plain signal: each value's inner signal signals the room's message as it is listened to.
        let plain = Callbacker<String>()
        bag += Signal(callbacker: plain).flatMapLatest(on: .mainActor) { room -> Signal<String> in
            transformed += 1
            let message = Rooms.messages[room] ?? "?"
            return Signal(onValue: { callback in
                callback("plain \(message)")
                return NilDisposer()
            })
        }.onValue(on: .mainActor) { log.append($0) }

        // A finite signal, and a future per value (mapLatestToFuture).
        let finite = Callbacker<Event<String>>()
        bag += FiniteSignal(callbacker: finite).flatMapLatest(on: .mainActor) { room -> FiniteSignal<String> in
            transformed += 1
            let message = Rooms.messages[room] ?? "?"
            return FiniteSignal(onEvent: { callback in
                callback(.value("finite \(message)"))
                return NilDisposer()
            })
        }.onValue(on: .mainActor) { log.append($0) }
        let futures = Callbacker<String>()
        bag += Signal(callbacker: futures).mapLatestToFuture(on: .mainActor) { room -> Future<String> in
            transformed += 1
            return Future("future \(Rooms.messages[room] ?? "?")")
        }.onValue(on: .mainActor) { log.append($0) }

        await loop.perform {
            plain.callAll(with: "lobby")
            finite.callAll(with: .value("lobby"))
            futures.callAll(with: "lobby")
        }
        await log.waitForEntries(3)
        Rooms.messages["kitchen"] = "stew"
        await loop.perform {
            plain.callAll(with: "kitchen")
            finite.callAll(with: .value("kitchen"))
            futures.callAll(with: "kitchen")
        }
        await log.waitForEntries(6)
        // Each flattening's values come in order; the three signals' callbacks may interleave.
        #expect(Set(log.entries.prefix(3)) == ["plain welcome", "finite welcome", "future welcome"])
        #expect(Set(log.entries.dropFirst(3)) == ["plain stew", "finite stew", "future stew"])

        // A readable signal: the current value's inner signal first, then each new value's.
        let selected = ReadWriteSignal("lobby")
        let message = selected.flatMapLatest(on: .mainActor) { room -> ReadSignal<String> in
            transformed += 1
            return ReadSignal("read \(Rooms.messages[room] ?? "?")")
        }
        #expect(message.value == "read welcome")
        bag += message.onValue(on: .mainActor) { log.append($0) }
        await loop.perform { selected.value = "kitchen" }
        await log.waitForEntries(7)
        #expect(log.entries.last == "read stew")
        #expect(transformed >= 8)
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    /// Main-actor state the flattenings' transforms read, changed between values.
    @MainActor enum Rooms {
        static var messages: [String: String] = [:]
    }

    @Test func orderedCallbacksUpdateMainActorStateInOrder() async throws {
        let log = MainActorLog()
        var unsaved = ["draft"]   // captured main-actor state
        let loop = EventLoop.startOnNewThread(name: "test.swift6.ordered")
        defer { loop.shutdown() }
        let willQuit = OrderedCallbacker<Int, String>()
        let bag = DisposeBag()
        defer { bag.dispose() }
        bag += willQuit.addCallback(on: .mainActor, { reason in
            log.append("last: \(reason), unsaved \(unsaved.count)")
        }, orderedBy: 2)
        // The first callback's future completes on the other loop: the second waits for it.
        bag += willQuit.addCallback(on: .mainActor, { reason -> Future<Void> in
            log.append("first: \(reason)")
            return Future<Void>(on: loop.scheduler) { completion in
                completion(.success(()))
                return NilDisposer()
            }.onValue(on: .mainActor) { unsaved = [] }
        }, orderedBy: 1)
        // Called on another loop's thread: the callbacks run on the main loop, lowest order first.
        let called = await loop.perform { willQuit.callAll(with: "update") }
        try await called.get()
        #expect(log.entries == ["first: update", "last: update, unsaved 0"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func passThroughRepeatAndSequenceHelpersUpdateMainActorState() async throws {
        let log = MainActorLog()
        var seen: [String] = []   // captured main-actor state
        let loop = EventLoop.startOnNewThread(name: "test.swift6.helpers")
        defer { loop.shutdown() }
        let fromLoop = Future<Int>(on: loop.scheduler) { completion in
            completion(.success(5))
            return NilDisposer()
        }
        let passed = try await fromLoop
            .onValuePassItThrough(on: .mainActor) { value -> Future<Void> in
                log.append("onValuePassItThrough \(value)")
                return Future()
            }
            .onResultPassItThrough(on: .mainActor) { _ -> Future<Void> in
                log.append("onResultPassItThrough")
                return Future()
            }
            .delay(on: .mainActor) { _ -> Double? in
                log.append("delay")
                return nil
            }
            .get()
        #expect(passed == 5)
        await #expect(throws: TestFailure.once) {
            try await Future<Int>(error: TestFailure.once).onErrorPassItThrough(on: .mainActor) { _ -> Future<Void> in
                log.append("onErrorPassItThrough")
                return Future()
            }.get()
        }

        let counter = MainActorRetryCounter()   // this test's own, as tests run in parallel
        let repeatedOnResult = try await Future<Int>(on: .mainActor) { completion in
            counter.attempt(completion)
            return NilDisposer()
        }.onResultRepeat(on: .mainActor, maxRepetitions: 5) { result in
            log.append("onResultRepeat")
            return result.error != nil
        }.get()
        #expect(repeatedOnResult == 3)
        counter.reset()
        let repeatedByFuture = try await Future<Int>(on: .mainActor) { completion in
            counter.attempt(completion)
            return NilDisposer()
        }.onErrorRepeat(on: .mainActor, maxRepetitions: 5) { _ -> Future<Bool> in
            log.append("onErrorRepeat deciding")
            return Future(true)
        }.get()
        #expect(repeatedByFuture == 3)

        let lengths = try await ["a", "bb"].mapToFuture(on: .mainActor) { word -> Future<Int> in
            seen.append(word)
            return Future(word.count)
        }.get()
        #expect(lengths == [1, 2])
        let results = try await ["c"].mapToFutureResults(on: .mainActor) { word -> Future<Int> in
            seen.append(word)
            throw TestFailure.twice
        }.get()
        #expect(results.count == 1 && results[0].error != nil)
        #expect(seen == ["a", "bb", "c"])

        let callbacker = Callbacker<String>()
        let binding = Signal(callbacker: callbacker).bindTo(on: .mainActor) { value in
            seen.append(value)
            log.append("bindTo \(value)")
        }
        defer { binding.dispose() }
        await loop.perform { callbacker.callAll(with: "bound") }
        await log.waitForEntries(10)
        #expect(seen.last == "bound")
        #expect(log.entries == [
            "onValuePassItThrough 5", "onResultPassItThrough", "delay", "onErrorPassItThrough",
            "onResultRepeat", "onResultRepeat", "onResultRepeat", "onErrorRepeat deciding", "onErrorRepeat deciding",
            "bindTo bound",
        ])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func batchesAndCoalescedActionsUpdateMainActorState() async throws {
        let log = MainActorLog()
        var coalescedRuns = 0   // captured main-actor state
        let worker = EventLoop.startOnNewThread(name: "test.swift6.batch")
        defer { worker.shutdown() }
        // The queue executes on another loop; the batch's main-actor operation still runs on the main loop.
        let queue = FutureQueue(executeOn: worker.scheduler)
        let batched = queue.enqueueBatch(on: .mainActor) { batch -> Future<Int> in
            log.append("batch")
            return batch.enqueue { Future(4) }
        }
        #expect(try await batched.get() == 4)

        let performer = SingleTaskPerformer<Void>()
        let first = performer.coalesceToNextRunLoop(on: .mainActor) {
            coalescedRuns += 1
            log.append("coalesced")
        }
        let second = performer.coalesceToNextRunLoop(on: .mainActor) { coalescedRuns += 100 }
        try await first.get()
        try await second.get()
        // Asked twice before the main loop's next turn: the first action runs, once.
        #expect(coalescedRuns == 1)
        #expect(log.entries == ["batch", "coalesced"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }
}
