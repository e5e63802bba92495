import Flow
import FlowNet
import FlowSystem
import FlowTimers
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Every callback-taking API, called from `@MainActor` code in Swift 6 mode, with a callback that
/// mutates main-actor state: this target compiling with no warning is half the test (no box, no
/// `MainActor.assumeIsolated`, no `@unchecked Sendable` in the callers); the other half checks at run
/// time that each callback ran, on the main loop.
@MainActor
@Suite("Swift 6 callbacks keep the main actor")
struct MainActorCallbackTests {
    /// Main-actor state a top-level Swift 6 program would keep: a static of a main-actor type.
    @MainActor enum Counters {
        static var accepted = 0
    }

    @Test func futureObserversAndTransformsUpdateMainActorState() async throws {
        let log = MainActorLog()
        let loop = EventLoop.startOnNewThread(name: "test.swift6.futures")
        defer { loop.shutdown() }
        // Completed on another loop's thread: the callbacks still run on the main loop, as the main actor.
        let twenty = Future<Int>(on: loop.scheduler) { completion in
            completion(.success(20))
            return NilDisposer()
        }
        let value = try await twenty
            .onValue(on: .mainActor) { log.append("onValue \($0)") }
            .onResult(on: .mainActor) { _ in log.append("onResult") }
            .mapResult(on: .mainActor) { result -> Int in
                log.append("mapResult")
                return try result.get() + 1
            }
            .flatMapResult(on: .mainActor) { result -> Future<Int> in
                log.append("flatMapResult")
                return Future(try result.get() + 1)
            }
            .map(on: .mainActor) { value -> Int in
                log.append("map")
                return value + 1
            }
            .flatMap(on: .mainActor) { value -> Future<Int> in
                log.append("flatMap")
                return Future(value + 1)
            }
            .always(on: .mainActor) { log.append("always") }
            .get()
        #expect(value == 24)

        let recovered = try await Future<Int>(error: TestFailure.once)
            .onError(on: .mainActor) { _ in log.append("onError") }
            .onErrorOrCancel(on: .mainActor) { _ in log.append("onErrorOrCancel") }
            .mapError(on: .mainActor) { _ -> Int in
                log.append("mapError")
                throw TestFailure.twice
            }
            .flatMapError(on: .mainActor) { _ -> Future<Int> in
                log.append("flatMapError")
                return Future(7)
            }
            .get()
        #expect(recovered == 7)

        let pending = Future<Int>(.forever).onCancel(on: .mainActor) { log.append("onCancel") }
        pending.cancel()
        await log.waitForEntries(12)
        #expect(log.entries == [
            "onValue 20", "onResult", "mapResult", "flatMapResult", "map", "flatMap", "always",
            "onError", "onErrorOrCancel", "mapError", "flatMapError", "onCancel",
        ])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func aCallbackNestedInAMainActorCallbackUpdatesMainActorState() async throws {
        let log = MainActorLog()
        let inner = Future<Int>(2)
        let outer = try await Future<Int>(1).flatMap(on: .mainActor) { first -> Future<Int> in
            log.append("outer \(first)")
            return inner
                .onValue(on: .mainActor) { second in log.append("inner \(second)") }
                .map(on: .mainActor) { second in
                    log.append("nested map")
                    return first + second
                }
        }.get()
        #expect(outer == 3)
        #expect(log.entries == ["outer 1", "inner 2", "nested map"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func retryHooksAndPredicatesUpdateMainActorState() async throws {
        let counter = MainActorRetryCounter()   // this test's own, as tests run in parallel
        let log = MainActorLog()
        let withHook = try await Future<Int>(on: .mainActor) { completion in
            counter.attempt(completion)
            return NilDisposer()
        }
        .onErrorRepeat(
            on: .mainActor, maxRepetitions: 5, delayBeforeRepetition: { _ in 0.001 },
            when: { _ in
                log.append("predicate")
                return true
            },
            onRetry: { retry in log.append("onRetry \(retry.number)") }
        )
        .get()
        #expect(withHook == 3)

        counter.reset()
        let withPredicate = try await Future<Int>(on: .mainActor) { completion in
            counter.attempt(completion)
            return NilDisposer()
        }
        .onErrorRepeat(on: .mainActor, delayBetweenRepetitions: 0.001, maxRepetitions: 5) { _ in
            log.append("when")
            return true
        }
        .get()
        #expect(withPredicate == 3)

        counter.reset()
        let withBackoff = try await Future<Int>(on: .mainActor) { completion in
            counter.attempt(completion)
            return NilDisposer()
        }
        .onErrorRepeat(
            on: .mainActor, backoff: .constant(0.001), maxRepetitions: 5,
            onRetry: { retry in log.append("backoff retry \(retry.number)") })
        .get()
        #expect(withBackoff == 3)
        #expect(log.entries == [
            "predicate", "onRetry 1", "predicate", "onRetry 2", "when", "when", "backoff retry 1", "backoff retry 2",
        ])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func signalListenersUpdateMainActorState() async throws {
        let log = MainActorLog()
        let bag = DisposeBag()
        defer { bag.dispose() }
        let values = ReadWriteSignal(0)
        bag += values.onValue(on: .mainActor) { log.append("onValue \($0)") }
        bag += values.onFirstValue(on: .mainActor) { log.append("onFirstValue \($0)") }
        bag += values.onEventType(on: .mainActor) { eventType in
            if case .event(.value(let value)) = eventType { log.append("onEventType \(value)") }
        }
        values.value = 1

        let finite = FiniteSignal<Int> { callback in
            callback(.value(5))
            callback(.end(TestFailure.once))
            return NilDisposer()
        }
        bag += finite.onEvent(on: .mainActor) { event in log.append(event.isEnd ? "onEvent end" : "onEvent value") }
        bag += finite.onEnd(on: .mainActor) { log.append("onEnd") }
        bag += finite.onError(on: .mainActor) { _ in log.append("onError") }
        await log.waitForEntries(7)
        #expect(log.entries.count == 7)
        #expect(Set(log.entries) == [
            "onValue 1", "onFirstValue 1", "onEventType 1", "onEvent value", "onEvent end", "onEnd", "onError",
        ])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func timersUpdateMainActorState() async throws {
        let log = MainActorLog()
        var ticks = 0   // main-actor state, captured
        let once = MainActorScheduler.mainActor.timer(after: 0.001) { log.append("timer") }
        let repeating = MainActorScheduler.mainActor.repeatingTimer(every: 0.001) { tick in
            ticks += 1
            if ticks == 2 { log.append("second tick, number \(tick.number)") }
        }
        let plain = MainActorScheduler.mainActor.repeatingTimer(every: 0.001) {
            if !log.entries.contains("plain tick") { log.append("plain tick") }
        }
        await log.waitForEntries(3)
        for timer in [once, repeating, plain] { timer.dispose() }
        #expect(Set(log.entries) == ["timer", "second tick, number 2", "plain tick"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func listenersAcceptHandlersUpdateMainActorState() async throws {
        let log = MainActorLog()
        Counters.accepted = 0
        let tcp = try await TCPListener.listenAsync(port: 0, on: .mainActor) { connection in
            Counters.accepted += 1
            log.append("tcp accepted")
            connection.close()
        }
        let loopback = try SocketAddress(host: "127.0.0.1", port: 0)
        let byAddress = try await TCPListener.listenAsync(at: loopback, on: .mainActor) { connection in
            Counters.accepted += 1
            log.append("tcp accepted by address")
            connection.close()
        }
        // The blocking form takes a plain closure, which Swift 6 already isolates to the caller.
        let blocking = try TCPListener.listen(port: 0, on: .main) { connection in
            Counters.accepted += 1
            log.append("tcp accepted, blocking form")
            connection.close()
        }
        let folder = NSTemporaryDirectory() + "flow-swift6-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let pipe = try await PipeListener.listenAsync(path: folder + "/s.sock", on: .mainActor) { connection in
            Counters.accepted += 1
            log.append("pipe accepted")
            connection.close()
        }
        for port in [tcp.port, byAddress.port, blocking.port] {
            let client = try await TCPConnection.connect(host: "127.0.0.1", port: port).get()
            client.close()
        }
        let client = try await PipeConnection.connect(toPath: folder + "/s.sock").get()
        client.close()
        await log.waitForEntries(4)
        for listener in [tcp, byAddress, blocking] { _ = try? await listener.close().get() }
        _ = try? await pipe.close().get()
        #expect(Counters.accepted == 4)
        #expect(Set(log.entries) == [
            "tcp accepted", "tcp accepted by address", "tcp accepted, blocking form", "pipe accepted",
        ])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func signalTransformsUpdateMainActorState() async throws {
        let log = MainActorLog()
        var passed = 0, mapped = 0, compacted = 0, filtered = 0   // captured main-actor vars
        let loop = EventLoop.startOnNewThread(name: "test.swift6.transforms")
        defer { loop.shutdown() }
        let callbacker = Callbacker<Int>()
        let bag = DisposeBag()
        defer { bag.dispose() }
        bag += Signal(callbacker: callbacker)
            .atValue(on: .mainActor) { _ in passed += 1 }
            .map(on: .mainActor) { value -> Int in
                mapped += 1
                return value * 10
            }
            .compactMap(on: .mainActor) { value -> Int? in
                compacted += 1
                return value == 20 ? nil : value
            }
            .filter(on: .mainActor) { value in
                filtered += 1
                return value < 40
            }
            .onValue(on: .mainActor) { log.append("value \($0)") }
        // Signalled from another loop's thread: each transform still runs on the main loop.
        await loop.perform { for value in 1...4 { callbacker.callAll(with: value) } }
        await log.waitForEntries(2)
        #expect(log.entries == ["value 10", "value 30"])
        #expect(passed == 4 && mapped == 4 && compacted == 4 && filtered == 3, "\(passed) \(mapped) \(compacted) \(filtered)")
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func mainActorSchedulerWorkAndPerformWhileUpdateMainActorState() async throws {
        let log = MainActorLog()
        var ran: [String] = []   // a captured main-actor var
        let loop = EventLoop.startOnNewThread(name: "test.swift6.scheduler")
        defer { loop.shutdown() }
        MainActorScheduler.mainActor.async {
            ran.append("async")
            log.append("async")
        }
        MainActorScheduler.mainActor.async(after: 0.001) {
            ran.append("async(after:)")
            log.append("async(after:)")
        }
        let cancelled = MainActorScheduler.mainActor.async(after: 3600) { ran.append("cancelled timer") }
        cancelled.dispose()
        // A future completed on another loop: the work runs on the main loop, as the main actor.
        let finished = Future<Int>(on: loop.scheduler) { completion in
            completion(.success(1))
            return NilDisposer()
        }
        finished.performWhile(on: .mainActor) {
            ran.append("performWhile")
            log.append("performWhile")
            return NilDisposer()
        }
        await log.waitForEntries(3)
        #expect(Set(ran) == ["async", "async(after:)", "performWhile"])
        #expect(ran.count == 3)
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func aListenerGroupsAcceptHandlerUpdatesMainActorState() async throws {
        let log = MainActorLog()
        var accepted = 0   // a captured main-actor var, written by the handler
        let loops = (0..<2).map { EventLoop.startOnNewThread(name: "test.swift6.group-\($0)") }
        defer { for loop in loops { loop.shutdown() } }
        // The connections are accepted on the two loops' threads; the handler runs on the main loop.
        let group = try await TCPListenerGroup.listenAsync(port: 0, loops: loops, on: .mainActor) { connection in
            accepted += 1
            log.append("group accepted")
            connection.close()
        }
        for _ in 0..<4 {
            let client = try await TCPConnection.connect(host: "127.0.0.1", port: group.port).get()
            client.close()
        }
        await log.waitForEntries(4)
        _ = try? await group.close().get()
        #expect(accepted == 4)
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func aServerWrittenAsStructuredTasksUpdatesMainActorState() async throws {
        let log = MainActorLog()
        let served = MainActorCounter()   // main-actor state, shared by the tasks below
        let server = try await TCPListener.listenForConnections(port: 0)
        // Tasks started here are main-actor code, and so is what they do after each `await`.
        let serving = Task {
            await withDiscardingTaskGroup { group in
                for await connection in server.connections {
                    log.append("accepted")
                    group.addTask { await Self.serveLines(of: connection, log: log, served: served) }
                }
            }
        }
        let client = try await TCPConnection.connect(host: "127.0.0.1", port: server.port).get()
        try await client.writeAsync("hello\n")
        var reply: [UInt8] = []
        while reply.last != UInt8(ascii: "\n"), let chunk = try await client.read().get() { reply += chunk }
        #expect(String(decoding: reply, as: UTF8.self) == "1: hello\n")
        _ = try await client.close().get()
        await log.waitForEntries(2)
        _ = try await server.closeGracefully(deadline: 3600).get()
        await serving.value
        #expect(served.count == 1)
        #expect(log.entries == ["accepted", "served"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    /// One connection's task: main-actor code, reading lines and writing with `await`.
    static func serveLines(of connection: TCPConnection, log: MainActorLog, served: MainActorCounter) async {
        defer { connection.close() }
        do {
            for try await line in connection.lines(maximumLength: 100, idleTimeout: 3600) {
                served.count += 1
                try await connection.writeAsync("\(served.count): \(line)\n")
            }
        } catch {
            log.append("failed: \(error)")
        }
        log.append("served")
    }

    @Test func futureQueueOperationsUpdateMainActorState() async throws {
        let log = MainActorLog()
        let worker = EventLoop.startOnNewThread(name: "test.swift6.queue")
        defer { worker.shutdown() }
        // The queue executes on another loop; the main-actor operations still run on the main loop.
        let queue = FutureQueue(executeOn: worker.scheduler)
        let first = queue.enqueue(on: .mainActor) { () -> Future<Int> in
            log.append("first")
            return Future(1)
        }
        let second = queue.enqueue(on: .mainActor) { () -> Int in
            log.append("second")
            return 2
        }
        #expect(try await first.get() == 1)
        #expect(try await second.get() == 2)
        #expect(log.entries == ["first", "second"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func aPathWatchersHandlerUpdatesMainActorState() async throws {
        let log = MainActorLog()
        var changedNames: [String] = []   // main-actor state, captured
        let folder = NSTemporaryDirectory() + "flow-swift6-watch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let watcher = try await PathWatcher.watchAsync(folder, on: .mainActor) { change in
            changedNames.append(change.name ?? "")
            if changedNames.count == 1 { log.append("changed") }
        }
        try Data("hello".utf8).write(to: URL(fileURLWithPath: folder + "/new.txt"))
        await log.waitForEntries(1)
        _ = try? await watcher.close().get()
        #expect(changedNames.contains("new.txt"))
        #expect(log.everyEntryWasOnTheMainLoop)
    }

    @Test func flowSystemCallbacksUpdateMainActorState() async throws {
        let log = MainActorLog()
        var windowChanges = 0
        // SIGWINCH: ignored by default, so one that arrives with no watcher open does no harm. Other
        // tests of this process may send it too: only the first is logged.
        let watcher = try await SignalWatcher.watchAsync([.windowSizeChanged], on: .mainActor) { signal in
            windowChanges += 1
            if windowChanges == 1 { log.append("signal \(signal)") }
        }
        kill(getpid(), SIGWINCH)
        let output = ChildProcess.run("/bin/sh", arguments: ["-c", "echo hi"])
            .onValue(on: .mainActor) { output in log.append("run \(output.outputText)") }
        let child = try await ChildProcess.spawnAsync("/bin/true")
        child.exit.onValue(on: .mainActor) { termination in log.append("exit \(termination)") }
        await log.waitForEntries(3)
        _ = try await output.get()
        _ = try? await watcher.close().get()
        #expect(windowChanges >= 1)
        #expect(Set(log.entries) == ["signal SIGWINCH", "run hi\n", "exit exit code 0"])
        #expect(log.everyEntryWasOnTheMainLoop)
    }
}

/// A count kept on the main actor: main-actor state that child tasks can share (a captured `var`
/// cannot be: a task group's child closure is `sending`).
@MainActor
final class MainActorCounter {
    var count = 0
}

/// Fails twice, then succeeds with the number of attempts: an operation a repetition re-runs, kept on
/// the main actor. Each test makes its own: tests run in parallel.
@MainActor
final class MainActorRetryCounter {
    private var attempts = 0

    func reset() { attempts = 0 }

    func attempt(_ completion: (Result<Int>) -> Void) {
        attempts += 1
        completion(attempts < 3 ? .failure(TestFailure.once) : .success(attempts))
    }
}

enum TestFailure: Error {
    case once, twice
}
