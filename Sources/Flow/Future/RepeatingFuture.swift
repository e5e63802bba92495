/// When a repeating future runs its operation again.
struct RepeatPolicy<Value: Sendable>: Sendable {
    /// Seconds to wait between the end of one execution and the start of the next; nil: none (re-run at
    /// once); 0 still waits for the timer's next turn, as in Flow.
    let delay: Double?
    /// Re-runs allowed after the first execution; nil: no limit.
    let maxRepetitions: Int?
    /// Decides, for a result, whether to run again (a future, so the decision may take time: a retry
    /// prompt, a backoff computation).
    let shouldRepeat: @Sendable (Result<Value>) -> Future<Bool>
    /// Seconds to wait before re-run number `repetition` (1-based); overrides `delay` when set.
    let delayForRepetition: (@Sendable (Int) -> Double)?
    /// Told of each re-run once it is decided, before its wait: for logs such as "attempt 3 failed,
    /// retrying in 240 ms".
    var onRetry: (@Sendable (RetryAttempt) -> Void)? = nil

    /// The wait before re-run number `repetition`, or nil to re-run at once.
    func delay(beforeRepetition repetition: Int) -> Double? {
        delayForRepetition?(repetition) ?? delay
    }
}

/// The future of `onErrorRepeat` / `onResultRepeat`: runs its upstream (the original, then fresh runs
/// of it) until the policy says stop, and completes with the last result.
///
/// Its bookkeeping is a ``RepetitionStateMachine`` kept under the future's own lock; what an event
/// returns is done after the lock is released.
final class RepeatingFuture<Value: Sendable>: Future<Value>, FutureListener, @unchecked Sendable {
    // @unchecked Sendable: `original`, `policy` and `scheduler` are immutable; `machine` is read and
    // written only under the inherited lock (`withLock`).
    typealias StateMachine = RepetitionStateMachine<
        Future<Value>, (future: any CancellableUpstream, listener: ObjectIdentifier), Disposable
    >

    let original: Future<Value>
    let policy: RepeatPolicy<Value>
    let scheduler: Scheduler
    private var machine: StateMachine

    private init(original: Future<Value>, policy: RepeatPolicy<Value>, scheduler: Scheduler, file: StaticString, line: UInt) {
        self.original = original
        self.policy = policy
        self.scheduler = scheduler
        machine = StateMachine(
            firstAttempt: original, maxRepetitions: policy.maxRepetitions,
            immediateRepetitionsBetweenYields: RepeatingFuture.immediateRepetitionsBetweenYields)
        super.init(initialResult: nil, file: file, line: line, countedLike: original.liveCount)
    }

    static func make(_ original: Future<Value>, policy: RepeatPolicy<Value>, scheduler: Scheduler, file: StaticString, line: UInt) -> RepeatingFuture {
        if let maximum = policy.maxRepetitions {
            misusePrecondition(maximum >= 0, "onErrorRepeat/onResultRepeat: maxRepetitions must be 0 or more, not \(maximum)")
        }
        let future = RepeatingFuture(original: original, policy: policy, scheduler: scheduler, file: file, line: line)
        original.addListener(future)
        return future
    }

    func futureDidComplete(_ result: Result<Value>) {
        guard withLock({ machine.attemptDidComplete(isCompleted: lockedIsCompleted) }) == .askPolicy else {
            complete(with: result)
            return
        }
        // The predicate runs on the scheduler captured when repetition was requested.
        let decision = policy.shouldRepeat(result)
        if let decided = decision.result {
            decide(decided, for: result)
        } else {
            let listener = DecisionListener { [self] decided in decide(decided, for: result) }
            let isKept = withLock {
                machine.decisionIsPending((decision, ObjectIdentifier(listener)), isCompleted: lockedIsCompleted)
            }
            guard isKept else { return }
            decision.addListener(listener)
        }
    }

    private func decide(_ decision: Result<Bool>, for result: Result<Value>) {
        guard withLock({ machine.decisionArrived(isCompleted: lockedIsCompleted) }) else { return }
        guard decision.value == true else {
            complete(with: result)  // a false or failing predicate ends with the last result
            return
        }
        let number = withLock { machine.repetitionDecided() }
        let delay = policy.delay(beforeRepetition: number)
        let start = withLock { machine.startRepetition(isDelayed: delay != nil) }
        if let onRetry = policy.onRetry, let error = result.error {
            onRetry(RetryAttempt(number: number, delay: delay ?? 0, error: error))
        }
        switch start {
        case .afterDelay:
            startAttempt(after: delay ?? 0)
        case .now:
            startAttempt()
        case .afterYielding:
            startAttemptAfterYielding()
        }
    }

    /// How many re-runs without a delay start at once, one after the other, before the next goes
    /// through the scheduler's queue. Few enough that an operation failing at once, repeated without
    /// limit, returns to its caller and lets the scheduler's other work (a timer, I/O, a `cancel()`)
    /// run between bursts; enough that a handful of quick retries costs no queue round trip.
    static var immediateRepetitionsBetweenYields: Int { 16 }

    /// Starts the next run once `delay` seconds passed on the scheduler's timer.
    private func startAttempt(after delay: Double) {
        // A future of the timer that fails if the timer is dropped uncalled (its loop closed),
        // so that the repetition ends with that error instead of waiting for good.
        let scheduler = self.scheduler
        let wait = Future<Void>.failingIfAbandoned(on: .none) { completion in
            scheduler.async(after: delay) { completion(.success(())) }
        }
        .onResult(on: .none) { [self] result in
            if case .failure(let error) = result {
                withLock { machine.delayFailed() }
                complete(with: .failure(error))
            } else {
                startAttempt()
            }
        }
        let goesOn = withLock {
            machine.delayStarted(wait.isCompleted ? nil : wait.disposable, isCompleted: lockedIsCompleted)
        }
        if !goesOn { wait.cancelQuietly() }
    }

    /// Starts the next run from the scheduler's queue rather than from this call: on ``Scheduler/none``,
    /// which has no queue, from the background queue's (as its delays use the background queue's timer).
    private func startAttemptAfterYielding() {
        switch scheduler.backend {
        case .loop(let loop):
            do {
                try loop.submit { [self] in startAttempt() }
            } catch {
                complete(with: .failure(error))  // the loop closed: nothing can run the repetition
            }
        case .immediate:
            Scheduler.background.enqueue { [self] in startAttempt() }
        case .queue, .custom:
            scheduler.enqueue { [self] in startAttempt() }
        }
    }

    private func startAttempt() {
        // Checked before starting: a repetition cancelled during its delay must not run again.
        guard !isCompleted else { return }
        let fresh = original.makeFresh()
        if withLock({ machine.attemptStarting(fresh, isCompleted: lockedIsCompleted) }) {
            fresh.addListener(self)
        } else {
            fresh.cancelQuietly()
        }
    }

    override var hasCancellationWork: Bool { true }

    override func didCancel() {
        let (delay, decision) = withLock { machine.cancel() }
        delay?.dispose()
        if let decision, decision.future.removeListenerAndCancelIfUnobserved(decision.listener) {
            Future<Value>.cancelUpstream(of: decision.future)
        }
    }

    override func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)] {
        [(withLock { machine.attempt }, ObjectIdentifier(self))]
    }

    override func makeFresh() -> Future<Value> {
        RepeatingFuture.make(original.makeFresh(), policy: policy, scheduler: scheduler, file: "(repetition)", line: 0)
    }
}

extension RepeatingFuture: CompletesOnlyThroughWhatItListensTo {}

/// Hands a predicate's decision to a repeating future.
private final class DecisionListener: FutureListener, Sendable {
    let decide: @Sendable (Result<Bool>) -> Void

    init(_ decide: @escaping @Sendable (Result<Bool>) -> Void) { self.decide = decide }

    func futureDidComplete(_ result: Result<Bool>) { decide(result) }
}

extension Future {
    /// A future that runs this future's operation again when it fails, until it succeeds, `predicate`
    /// says no, or `maxRepetitions` re-runs have been made; it completes with the last result.
    ///
    /// A repetition re-runs the whole upstream operation: every step this future derives from. Futures
    /// created outside an operation run again only if moved inside it with a ``Mover``.
    ///
    /// Without a delay, a repetition starts at once, 16 in a row at most: the next goes through
    /// `scheduler`'s queue (for ``Scheduler/none``, the background queue's), so that an operation failing
    /// at once, repeated without limit, still returns to the caller and lets the scheduler's timers, I/O
    /// and a `cancel()` run between repetitions.
    ///
    /// ```swift
    /// data(at: url).onErrorRepeat(delayBetweenRepetitions: 2, maxRepetitions: 3)   // runs at most 4 times
    /// ```
    ///
    /// - Parameters:
    ///   - scheduler: where `predicate` runs, and whose timer measures the delays; by default the
    ///     scheduler current here.
    ///   - delayBetweenRepetitions: seconds to wait before each re-run, on `scheduler`'s timer.
    ///   - maxRepetitions: re-runs allowed after the first execution (nil: no limit; below 0: a
    ///     precondition failure).
    ///   - file: where the returned future was created, for descriptions and abandonment errors (debug
    ///     builds); the caller's by default.
    ///   - line: the line of `file`.
    ///   - predicate: whether to repeat after an error (by default: always); runs on `scheduler`.
    @preconcurrency
    @discardableResult
    public final func onErrorRepeat(
        on scheduler: Scheduler = .current,
        delayBetweenRepetitions: Double? = nil, maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Error) -> Bool = { _ in true }
    ) -> Future<Value> {
        RepeatingFuture.make(self, policy: RepeatPolicy(
            delay: delayBetweenRepetitions, maxRepetitions: maxRepetitions,
            shouldRepeat: { result in Future<Bool>.decide(on: scheduler) { result.error.map(predicate) ?? false } },
            delayForRepetition: nil), scheduler: scheduler, file: file, line: line)
    }

    /// A future that runs this future's operation again when it fails, waiting before re-run number
    /// `n` (counted from 1) the seconds `delayBeforeRepetition(n)` returns: for backoff strategies.
    ///
    /// ```swift
    /// fetch().onErrorRepeat(maxRepetitions: 5, delayBeforeRepetition: { n in min(30, pow(2, Double(n))) })
    /// ```
    @preconcurrency
    @discardableResult
    public final func onErrorRepeat(
        on scheduler: Scheduler = .current,
        maxRepetitions: Int? = nil, delayBeforeRepetition: @escaping @Sendable (Int) -> Double,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Error) -> Bool = { _ in true }
    ) -> Future<Value> {
        onErrorRepeat(
            on: scheduler, maxRepetitions: maxRepetitions, delayBeforeRepetition: delayBeforeRepetition,
            file: file, line: line, when: predicate, onRetry: nil)
    }

    /// `onErrorRepeat(on:maxRepetitions:delayBeforeRepetition:file:line:when:)` telling `onRetry` of
    /// each re-run (its number, its wait, the error it follows) once decided, before the wait; on
    /// `scheduler`, after `predicate`.
    ///
    /// ```swift
    /// fetch().onErrorRepeat(maxRepetitions: 5, delayBeforeRepetition: { n in Double(n) }, onRetry: { retry in
    ///     log("attempt \(retry.number) failed: \(retry.error); retrying in \(retry.delay) s")
    /// })
    /// ```
    @preconcurrency
    @discardableResult
    public final func onErrorRepeat(
        on scheduler: Scheduler = .current,
        maxRepetitions: Int? = nil, delayBeforeRepetition: @escaping @Sendable (Int) -> Double,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Error) -> Bool = { _ in true },
        onRetry: (@Sendable (RetryAttempt) -> Void)?
    ) -> Future<Value> {
        var policy = RepeatPolicy<Value>(
            delay: nil, maxRepetitions: maxRepetitions,
            shouldRepeat: { result in Future<Bool>.decide(on: scheduler) { result.error.map(predicate) ?? false } },
            delayForRepetition: delayBeforeRepetition)
        policy.onRetry = onRetry
        return RepeatingFuture.make(self, policy: policy, scheduler: scheduler, file: file, line: line)
    }

    /// A future that runs this future's operation again when it fails, for as long as the future
    /// `predicate` returns succeeds with `true`: for decisions that take time, such as asking the user.
    ///
    /// ```swift
    /// data(at: url).onErrorRepeat { error in showRetryAlert(for: error) }
    /// ```
    @preconcurrency
    @discardableResult
    public final func onErrorRepeat(
        on scheduler: Scheduler = .current,
        maxRepetitions: Int? = nil, file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Error) -> Future<Bool>
    ) -> Future<Value> {
        RepeatingFuture.make(self, policy: RepeatPolicy(
            delay: nil, maxRepetitions: maxRepetitions,
            shouldRepeat: { result in
                guard let error = result.error else { return Future<Bool>(false) }
                return Future<Bool>.decide(on: scheduler) { predicate(error) }
            },
            delayForRepetition: nil), scheduler: scheduler, file: file, line: line)
    }

    /// A future that runs this future's operation again after any result for which `predicate` says
    /// so, at most `maxRepetitions` times; it completes with the last result.
    ///
    /// ```swift
    /// pollStatus().onResultRepeat(delayBetweenRepetitions: 1) { $0.value?.isFinished == false }
    /// ```
    @preconcurrency
    @discardableResult
    public final func onResultRepeat(
        on scheduler: Scheduler = .current,
        delayBetweenRepetitions: Double? = nil, maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Result<Value>) -> Bool = { _ in true }
    ) -> Future<Value> {
        RepeatingFuture.make(self, policy: RepeatPolicy(
            delay: delayBetweenRepetitions, maxRepetitions: maxRepetitions,
            shouldRepeat: { result in Future<Bool>.decide(on: scheduler) { predicate(result) } },
            delayForRepetition: nil), scheduler: scheduler, file: file, line: line)
    }

    /// A future that runs this future's operation again after any result for which the future
    /// `predicate` returns succeeds with `true`.
    @preconcurrency
    @discardableResult
    public final func onResultRepeat(
        on scheduler: Scheduler = .current,
        maxRepetitions: Int? = nil, file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @Sendable (Result<Value>) -> Future<Bool>
    ) -> Future<Value> {
        RepeatingFuture.make(self, policy: RepeatPolicy(
            delay: nil, maxRepetitions: maxRepetitions,
            shouldRepeat: { result in Future<Bool>.decide(on: scheduler) { predicate(result) } },
            delayForRepetition: nil), scheduler: scheduler, file: file, line: line)
    }

    /// A future that runs this future's operation `repeatCount` more times after the first, one after
    /// another, and collects every value in order; fails at the first error.
    ///
    /// ```swift
    /// sample().repeatAndCollect(repeatCount: 4, delayBetweenRepetitions: 0.1)   // five samples
    /// ```
    @discardableResult
    public final func repeatAndCollect(repeatCount: Int, delayBetweenRepetitions: Double? = nil) -> Future<[Value]> {
        misusePrecondition(repeatCount >= 0, "repeatAndCollect: repeatCount must be 0 or more, not \(repeatCount)")
        let collected = CollectedValues<Value>()
        return map(on: .none) { value -> Value in
            collected.append(value)
            return value
        }
        .onResultRepeat(delayBetweenRepetitions: delayBetweenRepetitions, maxRepetitions: repeatCount) { result in
            result.value != nil
        }
        // Taken whatever the result, so that a repetition of the returned future starts empty.
        .mapResult(on: .none) { result in
            let values = collected.take()
            return try result.map { _ in values }.get()
        }
    }
}

extension Future where Value == Bool {
    /// A future of `decision`'s answer, computed on `scheduler` (at once when already there).
    static func decide(on scheduler: Scheduler, _ decision: @escaping @Sendable () -> Bool) -> Future<Bool> {
        if scheduler.isImmediate { return Future(decision()) }
        return Future(on: scheduler, file: #fileID, line: #line, operationWithMover: { completion, _ in
            completion(.success(decision()))
            return NilDisposer()
        })
    }

    /// A future of the future `decision` returns, created on `scheduler`.
    static func decide(on scheduler: Scheduler, _ decision: @escaping @Sendable () -> Future<Bool>) -> Future<Bool> {
        if scheduler.isImmediate { return decision() }
        return Future(true).flatMap(on: scheduler) { _ in decision() }
    }
}

/// The values `repeatAndCollect` has gathered so far.
private final class CollectedValues<Value: Sendable>: Sendable {
    private let values = Locked<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }

    func take() -> [Value] {
        values.withLock { values in
            defer { values = [] }
            return values
        }
    }
}

/// One re-run of an `onErrorRepeat`, as its `onRetry` hook is told before the wait that precedes it.
///
/// ```swift
/// // attempt 3 failed: timed out after 0.5 s; retrying in 240 ms
/// log("attempt \(retry.number + 1) failed: \(retry.error); retrying in \(Int(retry.delay * 1000)) ms")
/// ```
public struct RetryAttempt: Sendable, CustomStringConvertible {
    /// Which re-run this is, counted from 1 (the first execution is not a re-run): the attempt that
    /// failed is number `number`, the one about to start `number + 1`.
    public let number: Int
    /// Seconds waited before the re-run starts (0: at once).
    public let delay: Double
    /// The error of the attempt that failed.
    public let error: any Error

    /// A re-run numbered `number`, starting `delay` seconds after failing with `error`.
    public init(number: Int, delay: Double, error: any Error) {
        self.number = number
        self.delay = delay
        self.error = error
    }

    /// `retry 3 in 240 ms after: <error>`.
    public var description: String { "retry \(number) in \(Int((delay * 1000).rounded())) ms after: \(error)" }
}
