/// Where a callback runs when it is main-actor code: on the main loop, as the main actor.
///
/// Work the main loop runs is main-actor work (the main loop, `DispatchQueue.main` and the main actor
/// are one serial context), so a callback on ``Scheduler/main`` may touch main-actor state. Swift 6
/// only knows that when the callback's type says so: pass `on: .mainActor`, and the closure is
/// `@MainActor`. It can then update the top-level `var`s of a `main.swift`, or any `@MainActor` state,
/// with no box and no warning:
///
/// ```swift
/// var attempts = 0                       // top-level: main-actor state in Swift 6
///
/// fetchReport()
///     .onError(on: .mainActor) { _ in attempts += 1 }
///     .onValue(on: .mainActor) { report in print("after \(attempts) failures: \(report)") }
///
/// bag += connections.onValue(on: .mainActor) { count in status = "\(count) open" }
/// ```
///
/// The callback runs on ``Scheduler/main``, exactly as with `on: .main`; only its type differs.
public struct MainActorScheduler: Sendable {
    /// The main actor, as the place a callback runs.
    public static let mainActor = MainActorScheduler()

    /// The scheduler the callbacks run on: ``Scheduler/main``.
    public var scheduler: Scheduler { .main }
}

/// Moves a value into code that runs on the same thread right away (main-actor code run from the main
/// loop's work): nothing crosses a thread, so it need not be `Sendable`.
@usableFromInline
struct SameThreadTransfer<Value>: @unchecked Sendable {
    // @unchecked Sendable: made and consumed within one synchronous call on one thread.
    @usableFromInline var value: Value

    @inlinable
    init(_ value: Value) { self.value = value }
}

extension MainActorScheduler {
    /// The callback that every `.mainActor` form hands to its `on: .main` form: it runs main-actor `body`
    /// as the main actor, from the main loop's work, which is main-actor work.
    ///
    /// The returned callback must be called on the main loop (the scheduler the forms pass with it); called
    /// anywhere else it stops the process, since `body` would run off the main actor.
    @inlinable
    package func callback<each Argument, Output>(
        _ body: @escaping @MainActor (repeat each Argument) -> Output
    ) -> @Sendable (repeat each Argument) -> Output {
        { (argument: repeat each Argument) -> Output in
            // The arguments and the result stay on this thread: the main loop's, which is the main actor's.
            let arguments = SameThreadTransfer((repeat each argument))
            return MainActor.assumeIsolated { SameThreadTransfer(body(repeat each arguments.value)) }.value
        }
    }

    /// The callback adapter above for a `body` that throws: the callback throws what `body` throws.
    @inlinable
    package func callback<each Argument, Output>(
        _ body: @escaping @MainActor (repeat each Argument) throws -> Output
    ) -> @Sendable (repeat each Argument) throws -> Output {
        { (argument: repeat each Argument) throws -> Output in
            let arguments = SameThreadTransfer((repeat each argument))
            return try MainActor.assumeIsolated { SameThreadTransfer(try body(repeat each arguments.value)) }.value
        }
    }
}

extension Future {
    /// Runs main-actor `callback` with the value if the future succeeds, on the main loop: as
    /// `onValue(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onValue(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor (Value) throws -> Void
    ) -> Future<Value> {
        onValue(on: mainActor.scheduler, file: file, line: line, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` with the error if the future fails, on the main loop: as
    /// `onError(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onError(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor (Error) throws -> Void
    ) -> Future<Value> {
        onError(on: mainActor.scheduler, file: file, line: line, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` with the result once the future completes, on the main loop: as
    /// `onResult(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onResult(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor (Result<Value>) throws -> Void
    ) -> Future<Value> {
        onResult(on: mainActor.scheduler, file: file, line: line, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` if the returned future is cancelled, on the main loop: as
    /// `onCancel(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onCancel(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor () -> Void
    ) -> Future<Value> {
        onCancel(on: mainActor.scheduler, file: file, line: line, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` once the future completes or is cancelled, on the main loop: as
    /// `always(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func always(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor () -> Void
    ) -> Future<Value> {
        always(on: mainActor.scheduler, file: file, line: line, mainActor.callback(callback))
    }

    /// A future with main-actor `transform` applied to the value, on the main loop: as
    /// `map(on: .main)`, for code that reads or updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func map<Other>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Value) throws -> Other
    ) -> Future<Other> {
        map(on: mainActor.scheduler, file: file, line: line, mainActor.callback(transform))
    }

    /// A future that completes like the future main-actor `transform` returns for the value, on the
    /// main loop: as `flatMap(on: .main)`, for code that reads or updates main-actor state (see
    /// ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func flatMap<Other>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Value) throws -> Future<Other>
    ) -> Future<Other> {
        flatMap(on: mainActor.scheduler, file: file, line: line, mainActor.callback(transform))
    }
}

extension SignalProvider {
    /// Runs main-actor `callback` with each value signalled from now on, on the main loop: as
    /// `onValue(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    ///
    /// - Returns: a disposable that stops listening; keep it, since letting go of it stops listening too.
    @inlinable
    public func onValue(on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Value) -> Void) -> Disposable {
        onValue(on: mainActor.scheduler, mainActor.callback(callback))
    }
}

extension Future {
    /// Runs main-actor `callback` with the error if the future fails, or with nil if the returned future
    /// is cancelled, on the main loop: as `onErrorOrCancel(on: .main)`, for code that updates main-actor
    /// state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onErrorOrCancel(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor (Error?) -> Void
    ) -> Future<Value> {
        onErrorOrCancel(on: mainActor.scheduler, file: file, line: line, mainActor.callback(callback))
    }

    /// A future with main-actor `transform` applied to the result, on the main loop: as
    /// `mapResult(on: .main)`, for code that reads or updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func mapResult<Other>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Result<Value>) throws -> Other
    ) -> Future<Other> {
        mapResult(on: mainActor.scheduler, file: file, line: line, mainActor.callback(transform))
    }

    /// A future that completes like the future main-actor `transform` returns for the result, on the
    /// main loop: as `flatMapResult(on: .main)`, for code that reads or updates main-actor state (see
    /// ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func flatMapResult<Other>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Result<Value>) throws -> Future<Other>
    ) -> Future<Other> {
        flatMapResult(on: mainActor.scheduler, file: file, line: line, mainActor.callback(transform))
    }

    /// A future that replaces a failure with the value main-actor `transform` returns for the error, on
    /// the main loop: as `mapError(on: .main)`, for code that reads or updates main-actor state (see
    /// ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func mapError(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Error) throws -> Value
    ) -> Future<Value> {
        mapError(on: mainActor.scheduler, file: file, line: line, mainActor.callback(transform))
    }

    /// A future that replaces a failure with the future main-actor `transform` returns for the error, on
    /// the main loop: as `flatMapError(on: .main)`, for code that reads or updates main-actor state (see
    /// ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func flatMapError(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Error) throws -> Future<Value>
    ) -> Future<Value> {
        flatMapError(on: mainActor.scheduler, file: file, line: line, mainActor.callback(transform))
    }

    /// A future that runs this future's operation again when it fails, asking main-actor `predicate`
    /// whether to: as `onErrorRepeat(on: .main, ...)`, for a decision that reads or updates main-actor
    /// state (see ``MainActorScheduler``). The waits run on the main loop's timer.
    ///
    /// ```swift
    /// var failures = 0   // main-actor state
    /// fetch().onErrorRepeat(on: .mainActor, delayBetweenRepetitions: 1, maxRepetitions: 3) { _ in
    ///     failures += 1
    ///     return true
    /// }
    /// ```
    @discardableResult
    public final func onErrorRepeat(
        on mainActor: MainActorScheduler,
        delayBetweenRepetitions: Double? = nil, maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @MainActor (Error) -> Bool = { _ in true }
    ) -> Future<Value> {
        onErrorRepeat(
            on: mainActor.scheduler, delayBetweenRepetitions: delayBetweenRepetitions,
            maxRepetitions: maxRepetitions, file: file, line: line, when: mainActor.callback(predicate))
    }

    /// A future that runs this future's operation again when it fails, waiting
    /// `delayBeforeRepetition(n)` seconds before re-run number `n`, with main-actor `predicate` and
    /// `onRetry` hook: as `onErrorRepeat(on: .main, ...)`, for code that counts or shows retries in
    /// main-actor state (see ``MainActorScheduler``). `onRetry` is told of each re-run once decided,
    /// before its wait, after `predicate`.
    ///
    /// ```swift
    /// var status = ""   // main-actor state
    /// fetch().onErrorRepeat(on: .mainActor, maxRepetitions: 5, delayBeforeRepetition: { n in Double(n) },
    ///                       onRetry: { retry in status = "retry \(retry.number) in \(retry.delay) s" })
    /// ```
    @discardableResult
    public final func onErrorRepeat(
        on mainActor: MainActorScheduler,
        maxRepetitions: Int? = nil, delayBeforeRepetition: @escaping @Sendable (Int) -> Double,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @MainActor (Error) -> Bool = { _ in true },
        onRetry: (@MainActor (RetryAttempt) -> Void)?
    ) -> Future<Value> {
        onErrorRepeat(
            on: mainActor.scheduler, maxRepetitions: maxRepetitions, delayBeforeRepetition: delayBeforeRepetition,
            file: file, line: line, when: mainActor.callback(predicate), onRetry: onRetry.map(mainActor.callback))
    }
}

extension SignalProvider {
    /// Runs main-actor `callback` with each event, `.initial` included, on the main loop: as
    /// `onEventType(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    ///
    /// - Returns: a disposable that stops listening; keep it, since letting go of it stops listening too.
    @inlinable
    public func onEventType(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (EventType<Value>) -> Void
    ) -> Disposable {
        onEventType(on: mainActor.scheduler, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` with the first value, then stops listening, on the main loop: as
    /// `onFirstValue(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    ///
    /// - Returns: a disposable that stops listening if the first value has not come yet.
    @inlinable
    public func onFirstValue(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Value) -> Void
    ) -> Disposable {
        onFirstValue(on: mainActor.scheduler, mainActor.callback(callback))
    }
}

extension SignalProvider where Kind == Finite {
    /// Runs main-actor `callback` with each event (values, then the end), on the main loop: as
    /// `onEvent(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    ///
    /// - Returns: a disposable that stops listening; keep it, since letting go of it stops listening too.
    @inlinable
    public func onEvent(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Event<Value>) -> Void
    ) -> Disposable {
        onEvent(on: mainActor.scheduler, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` once the signal ends (with or without an error), on the main loop: as
    /// `onEnd(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    public func onEnd(on mainActor: MainActorScheduler, _ callback: @escaping @MainActor () -> Void) -> Disposable {
        onEnd(on: mainActor.scheduler, mainActor.callback(callback))
    }

    /// Runs main-actor `callback` with the error if the signal ends with one, on the main loop: as
    /// `onError(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    public func onError(
        on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Error) -> Void
    ) -> Disposable {
        onError(on: mainActor.scheduler, mainActor.callback(callback))
    }
}

extension FutureQueue {
    /// Adds a main-actor operation, run in order like the others but on the main loop as the main
    /// actor, whatever scheduler the queue executes on: for work that reads or updates main-actor state
    /// (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var uploaded = 0   // main-actor state
    /// queue.enqueue(on: .mainActor) { upload(next).onValue(on: .mainActor) { _ in uploaded += 1 } }
    /// ```
    ///
    /// - Returns: a future completing like the operation's future, on the scheduler current here.
    @discardableResult
    public func enqueue<Output>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @MainActor () throws -> Future<Output>
    ) -> Future<Output> {
        enqueue(file: file, line: line) { () throws -> Future<Output> in
            Future<Void>(()).flatMap(on: mainActor, file: file, line: line) { _ in try operation() }
        }
    }

    /// Adds a main-actor operation that returns a value directly (or throws), run in order like the
    /// others but on the main loop as the main actor (see ``MainActorScheduler``).
    ///
    /// - Returns: a future with the operation's value or error, completing on the scheduler current here.
    @discardableResult
    public func enqueue<Output>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @MainActor () throws -> Output
    ) -> Future<Output> {
        enqueue(on: mainActor, file: file, line: line) { () throws -> Future<Output> in Future(try operation()) }
    }
}

extension Future {
    /// Creates a future that runs main-actor `operation` on the main loop (again for each repetition),
    /// and completes when the operation calls its completion callback: as `Future(on: .main)`, for an
    /// operation that reads or updates main-actor state (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var attempts = 0   // main-actor state
    /// let fetched = Future<Data>(on: .mainActor) { completion in
    ///     attempts += 1
    ///     return download(url, completion: completion)
    /// }
    /// ```
    public convenience init(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        onResult operation: @escaping @MainActor (@escaping @Sendable (Result<Value>) -> Void) throws -> Disposable
    ) {
        // Not through `MainActorScheduler.callback`: the compiler cannot yet lower a parameter pack whose
        // element is the completion closure.
        self.init(on: mainActor.scheduler, file: file, line: line) { completion in
            try MainActor.assumeIsolated { SameThreadTransfer(try operation(completion)) }.value
        }
    }

    /// Creates a future that runs main-actor `work` on the main loop and completes with what it returns
    /// or throws: as `Future(on: .main, immediate:)`, for work that reads main-actor state.
    ///
    /// ```swift
    /// let snapshot = Future(on: .mainActor) { model.items.count }
    /// ```
    public convenience init(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        immediate work: @escaping @MainActor () throws -> Value
    ) {
        self.init(on: mainActor.scheduler, file: file, line: line, immediate: mainActor.callback(work))
    }
}

extension Future {
    /// Runs main-actor `body` with the value if the future succeeds, on the main loop, and completes
    /// with the value once the future `body` returns has succeeded: as `onValuePassItThrough(on: .main)`
    /// (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onValuePassItThrough<Other>(
        on mainActor: MainActorScheduler, _ body: @escaping @MainActor (Value) throws -> Future<Other>
    ) -> Future<Value> {
        onValuePassItThrough(on: mainActor.scheduler, mainActor.callback(body))
    }

    /// Runs main-actor `body` with the error if the future fails, on the main loop, and fails with the
    /// same error once the future `body` returns has succeeded: as `onErrorPassItThrough(on: .main)`
    /// (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onErrorPassItThrough<Other>(
        on mainActor: MainActorScheduler, _ body: @escaping @MainActor (Error) throws -> Future<Other>
    ) -> Future<Value> {
        onErrorPassItThrough(on: mainActor.scheduler, mainActor.callback(body))
    }

    /// Runs main-actor `body` with the result, on the main loop, and completes with that result once
    /// the future `body` returns has succeeded: as `onResultPassItThrough(on: .main)` (see
    /// ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onResultPassItThrough<Other>(
        on mainActor: MainActorScheduler, _ body: @escaping @MainActor (Result<Value>) throws -> Future<Other>
    ) -> Future<Value> {
        onResultPassItThrough(on: mainActor.scheduler, mainActor.callback(body))
    }

    /// The future's result, delayed by the seconds main-actor `delay` returns for it (`nil`: not
    /// delayed), asked on the main loop, whose timer times the wait: as `delay(on: .main, by:)` (see
    /// ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func delay(
        on mainActor: MainActorScheduler, by delay: @escaping @MainActor (Result<Value>) -> Double?
    ) -> Future<Value> {
        self.delay(on: mainActor.scheduler, by: mainActor.callback(delay))
    }

    /// A future that runs this future's operation again after a result main-actor `predicate` asks to
    /// repeat, on the main loop: as `onResultRepeat(on: .main, ...)` (see ``MainActorScheduler``).
    @discardableResult
    public final func onResultRepeat(
        on mainActor: MainActorScheduler,
        delayBetweenRepetitions: Double? = nil, maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @MainActor (Result<Value>) -> Bool = { _ in true }
    ) -> Future<Value> {
        onResultRepeat(
            on: mainActor.scheduler, delayBetweenRepetitions: delayBetweenRepetitions,
            maxRepetitions: maxRepetitions, file: file, line: line, when: mainActor.callback(predicate))
    }

    /// A future that runs this future's operation again when it fails and the future main-actor
    /// `predicate` returns for the error gives `true`; `predicate` runs on the main loop: as
    /// `onErrorRepeat(on: .main, when:)` with a deciding future (see ``MainActorScheduler``).
    @discardableResult
    public final func onErrorRepeat(
        on mainActor: MainActorScheduler, maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @MainActor (Error) -> Future<Bool>
    ) -> Future<Value> {
        onErrorRepeat(
            on: mainActor.scheduler, maxRepetitions: maxRepetitions, file: file, line: line,
            when: mainActor.callback(predicate))
    }

    /// A future that runs this future's operation again when the future main-actor `predicate` returns
    /// for the result gives `true`; `predicate` runs on the main loop: as
    /// `onResultRepeat(on: .main, when:)` with a deciding future (see ``MainActorScheduler``).
    @discardableResult
    public final func onResultRepeat(
        on mainActor: MainActorScheduler, maxRepetitions: Int? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        when predicate: @escaping @MainActor (Result<Value>) -> Future<Bool>
    ) -> Future<Value> {
        onResultRepeat(
            on: mainActor.scheduler, maxRepetitions: maxRepetitions, file: file, line: line,
            when: mainActor.callback(predicate))
    }
}

extension Sequence where Element: Sendable {
    /// The values of the futures main-actor `transform` returns for the elements, one element after
    /// the other, each asked on the main loop: as `mapToFuture(on: .main)` (see ``MainActorScheduler``).
    ///
    /// ```swift
    /// var uploaded = 0   // main-actor state
    /// files.mapToFuture(on: .mainActor) { file in upload(file).onValue(on: .mainActor) { _ in uploaded += 1 } }
    /// ```
    @discardableResult
    public func mapToFuture<Output>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        transform: @escaping @MainActor (Element) throws -> Future<Output>
    ) -> Future<[Output]> {
        mapToFuture(on: mainActor.scheduler, file: file, line: line, transform: mainActor.callback(transform))
    }

    /// The results of the futures main-actor `transform` returns for the elements, one element after
    /// the other, each asked on the main loop, carrying on after a failure: as
    /// `mapToFutureResults(on: .main)` (see ``MainActorScheduler``).
    @discardableResult
    public func mapToFutureResults<Output>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        transform: @escaping @MainActor (Element) throws -> Future<Output>
    ) -> Future<[Result<Output>]> {
        mapToFutureResults(on: mainActor.scheduler, file: file, line: line, transform: mainActor.callback(transform))
    }
}

extension SignalProvider {
    /// Sets main-actor state with each value from now on, through `setValue` on the main loop: as
    /// `bindTo(on: .main, _:)` with a closure (see ``MainActorScheduler``).
    ///
    /// - Returns: a disposable that stops the binding.
    @inlinable
    public func bindTo(on mainActor: MainActorScheduler, _ setValue: @escaping @MainActor (Value) -> Void) -> Disposable {
        bindTo(on: mainActor.scheduler, mainActor.callback(setValue))
    }
}

extension FutureQueue {
    /// Adds a main-actor operation that runs the operations it adds to its own queue (`batch`, running
    /// up to `maxConcurrentCount` at once) before the next operation of this queue starts: as
    /// `enqueueBatch`, with the operation run on the main loop as the main actor (see
    /// ``MainActorScheduler``).
    ///
    /// - Returns: a future completing like the operation's future once the batch is empty.
    @discardableResult
    public func enqueueBatch<Output>(
        on mainActor: MainActorScheduler, maxConcurrentCount: Int = 1,
        file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @MainActor (FutureQueue<Resource>) throws -> Future<Output>
    ) -> Future<Output> {
        enqueueBatch(maxConcurrentCount: maxConcurrentCount, file: file, line: line) { batch throws -> Future<Output> in
            Future<Void>(()).flatMap(on: mainActor, file: file, line: line) { _ in try operation(batch) }
        }
    }
}

extension SingleTaskPerformer where Value == Void {
    /// Runs main-actor `action` once on the main loop's next turn, however many calls come before it:
    /// as `coalesceToNextRunLoop(on: .main)` (see ``MainActorScheduler``).
    ///
    /// - Returns: a future completing once the action has run.
    @discardableResult
    public func coalesceToNextRunLoop(
        on mainActor: MainActorScheduler, action: @escaping @MainActor () throws -> Void
    ) -> Future<Void> {
        coalesceToNextRunLoop(on: mainActor.scheduler, action: mainActor.callback(action))
    }
}
