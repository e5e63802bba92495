import BenchmarkSupport
import Dispatch
import Flow

/// Flow's side of each workload. "On the loop" work runs inside a job on a loop driven by the calling
/// thread, so `Scheduler.current` is the loop and callbacks run at once.
enum FlowWorkloads {
    typealias Completion = @Sendable (Result<Int>) -> Void

    /// The completion callbacks of many pending futures.
    nonisolated(unsafe) static var pendingCompletions: [Completion] = []
    /// Holds the completion callback of the promise-like future made last (see ``makePromise()``).
    nonisolated(unsafe) static let holder = CompletionHolder<Int>()

    /// A pending future and the way to complete it: `Future { completion in ... }` keeping
    /// `completion` in a holder, as a promise wrapper does. The operation captures nothing, so it
    /// costs no closure context.
    static func makePromise() -> Future<Int> {
        Future<Int> { completion in
            FlowWorkloads.holder.completion = completion
            return NilDisposer()
        }
    }

    static func makeCollectedPromise() -> Future<Int> {
        Future<Int> { completion in
            FlowWorkloads.pendingCompletions.append(completion)
            return NilDisposer()
        }
    }

    // MARK: P1: promise + 1 map + completion, on the loop

    // Expected allocations per operation: the future (its recipe lives in it), its completion
    // callback's handle and the mapped future.
    static func promiseMapComplete(_ reporter: Reporter) {
        reporter.measure(operations: 1_000_000) { operations, stopwatch in
            onNewLoop { _ in
                stopwatch.start()
                for index in 0..<operations {
                    let promise = makePromise()
                    _ = promise.map { value in
                        Shared.sink &+= value
                        return value &+ 1
                    }
                    holder.completion.take()!(.success(index))
                }
                stopwatch.stop()
            }
        }
    }

    // MARK: P2: one promise, 1M chained maps, build + complete

    static func chainedMaps(_ reporter: Reporter) {
        reporter.measure("ns/link", operations: 1_000_000) { links, stopwatch in
            onNewLoop { _ in
                stopwatch.start()
                buildAndCompleteChain(links: links)
                stopwatch.stop()
            }
        }
    }

    private static func buildAndCompleteChain(links: Int) {
        let head = makePromise()
        var tail = head
        for _ in 0..<links {
            tail = tail.map { $0 &+ 1 }
        }
        holder.completion.take()!(.success(0))
        guard tail.result?.value == links else { fatalError("P2: chain did not complete") }
    }

    // MARK: P3: recursive flatMap on completed futures, 1M deep

    static func recursiveFlatMap(_ reporter: Reporter) {
        reporter.measure("ns/step", operations: 1_000_000) { depth, stopwatch in
            onNewLoop { _ in
                stopwatch.start()
                let result = countdown(depth).result?.value
                stopwatch.stop()
                guard result == 0 else { fatalError("P3: recursion did not complete") }
            }
        }
    }

    private static func countdown(_ remaining: Int) -> Future<Int> {
        Future(remaining).flatMap { value in
            value == 0 ? Future(0) : countdown(value - 1)
        }
    }

    // MARK: P4: join over 100k pending futures, then complete all

    static func joinPending(_ reporter: Reporter) {
        reporter.measure("ns/future", operations: 100_000, countingOperations: 100_000) { count, stopwatch in
            pendingCompletions = []
            pendingCompletions.reserveCapacity(count)
            onNewLoop { _ in
                stopwatch.start()
                joinAndComplete(count: count)
                stopwatch.stop()
            }
        }
    }

    private static func joinAndComplete(count: Int) {
        var futures: [Future<Int>] = []
        futures.reserveCapacity(count)
        for _ in 0..<count {
            futures.append(makeCollectedPromise())
        }
        let joined = join(futures)
        futures = []
        for (index, completion) in pendingCompletions.enumerated() {
            completion(.success(index))
        }
        pendingCompletions.removeAll(keepingCapacity: true)
        guard joined.result?.value?.count == count else { fatalError("P4: join did not complete") }
    }

    // MARK: P5: tasks posted from another thread

    static func postFromThread(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            let loop = EventLoop.startOnNewThread(name: "bench")
            let semaphore = DispatchSemaphore(value: 0)
            loop.execute { semaphore.signal() }
            semaphore.wait()  // the loop's thread is up and idle
            Shared.taskCounter = 0
            stopwatch.start()
            for _ in 0..<count {
                loop.execute { Shared.taskCounter &+= 1 }
            }
            loop.execute { semaphore.signal() }
            semaphore.wait()
            stopwatch.stop()
            guard Shared.taskCounter == count else { fatalError("P5: lost tasks") }
            loop.shutdown()
        }
    }

    // MARK: P5-main: tasks posted to the main loop from another thread, while run() drives it

    /// Another thread posts to `EventLoop.main` while the main thread is in `EventLoop.main.run()`:
    /// each post is one block of the main queue (the main loop, the main queue and the main actor are
    /// one serial context), which the loop drains.
    static func postToMainFromThread(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            measureMainLoopPosts(count: count, stopwatch: stopwatch) { EventLoop.main.execute($0) }
        }
    }

    /// The reference: the same thread posts `DispatchQueue.main.async` blocks, which the same
    /// `run()` drains.
    static func postToMainQueueFromThread(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            measureMainLoopPosts(count: count, stopwatch: stopwatch) { DispatchQueue.main.async(execute: $0) }
        }
    }

    private static func measureMainLoopPosts(
        count: Int, stopwatch: Stopwatch, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) {
        Shared.taskCounter = 0
        let keepAlive = EventLoop.main.keepAlive()
        DispatchQueue.global().async {
            stopwatch.start()
            for _ in 0..<count {
                post { Shared.taskCounter &+= 1 }
            }
            post {
                stopwatch.stop()
                keepAlive.dispose()
            }
        }
        try! EventLoop.main.run()
        guard Shared.taskCounter == count else { fatalError("P5-main: lost tasks") }
    }

    // MARK: P6: tasks posted on the loop

    static func postOnLoop(_ reporter: Reporter) {
        reporter.measure("ns/task", operations: 1_000_000) { count, stopwatch in
            Shared.taskCounter = 0
            onNewLoop { loop in
                stopwatch.start()
                for _ in 0..<count {
                    loop.execute { Shared.taskCounter &+= 1 }
                }
                loop.execute { stopwatch.stop() }
            }
            guard Shared.taskCounter == count else { fatalError("P6: lost tasks") }
        }
    }

    // MARK: P7: 1M random timers

    static func timers(_ reporter: Reporter) {
        let count = 1_000_000
        let delays = randomDelaysInMilliseconds(count: count)

        // Allocations, on a tenth of the timers: scheduling one, and cancelling one.
        let counted = count / 10
        nonisolated(unsafe) var scheduleAllocations: UInt64 = 0
        nonisolated(unsafe) var cancelAllocations: UInt64 = 0
        nonisolated(unsafe) var disposables: [Disposable] = []
        disposables.reserveCapacity(count)
        onNewLoop { loop in
            mc_start_counting()
            for index in 0..<counted {
                disposables.append(loop.execute(after: Double(delays[index]) / 1_000) { Shared.timersFired &+= 1 })
            }
            scheduleAllocations = mc_stop_counting()
            mc_start_counting()
            for disposable in disposables { disposable.dispose() }
            disposables.removeAll(keepingCapacity: true)
            cancelAllocations = mc_stop_counting()
        }

        // Schedule all, then wait for the last one to fire.
        Shared.timersFired = 0
        Shared.timerCount = count
        nonisolated(unsafe) var scheduleNanoseconds: UInt64 = 0
        nonisolated(unsafe) var startedAt: UInt64 = 0
        onNewLoop { loop in
            startedAt = monotonicNanoseconds()
            for delay in delays {
                loop.execute(after: Double(delay) / 1_000) {
                    Shared.timersFired &+= 1
                    if Shared.timersFired == Shared.timerCount {
                        Shared.lastTimerFiredAt = monotonicNanoseconds()
                    }
                }
            }
            scheduleNanoseconds = monotonicNanoseconds() - startedAt
        }
        guard Shared.timersFired == count else { fatalError("P7: lost timers") }
        let totalNanoseconds = Shared.lastTimerFiredAt - startedAt

        // Schedule all, then cancel all (and free them).
        nonisolated(unsafe) var cancelNanoseconds: UInt64 = 0
        onNewLoop { loop in
            for delay in delays {
                disposables.append(loop.execute(after: Double(delay) / 1_000) { Shared.timersFired &+= 1 })
            }
            let cancelStartedAt = monotonicNanoseconds()
            for disposable in disposables { disposable.dispose() }
            disposables.removeAll(keepingCapacity: true)
            cancelNanoseconds = monotonicNanoseconds() - cancelStartedAt
        }

        reporter.record("schedule ns/timer", Double(scheduleNanoseconds) / Double(count))
        reporter.record("until last fired s", Double(totalNanoseconds) / 1e9)
        reporter.record("cancel ns/timer", Double(cancelNanoseconds) / Double(count))
        reporter.record("schedule allocs/timer", Double(scheduleAllocations) / Double(counted))
        reporter.record("cancel allocs/timer", Double(cancelAllocations) / Double(counted))
    }

    // MARK: P8: memory per pending future with one callback, per pending timer

    static func memory(_ reporter: Reporter) {
        let count = 100_000
        nonisolated(unsafe) var futureGrowth = HeapGrowth()
        pendingCompletions = []
        pendingCompletions.reserveCapacity(count)
        onNewLoop { _ in
            futureGrowth = measureHeapGrowth {
                for _ in 0..<count {
                    makeCollectedPromise().onValue { Shared.sink &+= $0 }
                }
            }
            for completion in pendingCompletions { completion(.success(1)) }
            pendingCompletions = []
        }

        // The same future with no continuation: the root future and its completion callback's handle.
        nonisolated(unsafe) var bareGrowth = HeapGrowth()
        pendingCompletions = []
        pendingCompletions.reserveCapacity(count)
        onNewLoop { _ in
            bareGrowth = measureHeapGrowth {
                for _ in 0..<count {
                    _ = makeCollectedPromise()
                }
            }
            for completion in pendingCompletions { completion(.success(1)) }
            pendingCompletions = []
        }
        printObjectSizes()

        nonisolated(unsafe) var timerGrowth = HeapGrowth()
        nonisolated(unsafe) var disposables: [Disposable] = []
        disposables.reserveCapacity(count)
        onNewLoop { loop in
            timerGrowth = measureHeapGrowth {
                for index in 0..<count {
                    disposables.append(loop.execute(after: 10 + Double(index % 1_000) / 1_000) { Shared.timersFired &+= 1 })
                }
            }
            for disposable in disposables { disposable.dispose() }
            disposables = []
        }

        reporter.recordHeapGrowth(futureGrowth, per: "pending future", count: count)
        reporter.recordHeapGrowth(bareGrowth, per: "pending future without continuation", count: count)
        reporter.recordHeapGrowth(timerGrowth, per: "pending timer", count: count)
    }

    /// Prints the malloc chunk of each object of a pending future with one `onValue`, for the byte
    /// budget in BENCHMARKS.md (not a result line: `run` ignores it). The completion handle is not
    /// reachable from here: it is the rest of "pending future without continuation".
    private static func printObjectSizes() {
        func chunk(_ object: AnyObject) -> UInt64 {
            mc_chunk_size(Unmanaged.passUnretained(object).toOpaque())
        }
        pendingCompletions = []
        let root = makeCollectedPromise()
        let observer = root.onValue { Shared.sink &+= $0 }
        print("P8 objects: root future \(chunk(root)) B, onValue future \(chunk(observer)) B")
        for completion in pendingCompletions { completion(.success(1)) }
        pendingCompletions = []
    }
}

/// Keeps a completion callback for later, as a promise wrapper or a request object does: a generic
/// class, whose property holds the callback in the form the library hands it over. A property of a
/// concrete function type, such as `((Result<Int>) -> Void)?`, makes Swift wrap the callback in a
/// re-abstraction closure when it is stored, an allocation of the program's own (32 bytes).
final class CompletionHolder<Value: Sendable> {
    var completion: (@Sendable (Result<Value>) -> Void)?
}
