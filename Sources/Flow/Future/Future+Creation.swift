import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension Future {
    /// Creates a future that runs `operation` on `scheduler` at once, and completes when the operation
    /// calls its completion callback.
    ///
    /// The operation returns a ``Disposable`` that is disposed once the future completes or is
    /// cancelled: the place to stop a request, a timer or a connection.
    ///
    /// ```swift
    /// Future<Data> { completion in
    ///     let task = session.dataTask(with: url) { data, _, error in
    ///         completion(error.map { .failure($0) } ?? .success(data!))
    ///     }
    ///     task.resume()
    ///     return Disposer { task.cancel() }
    /// }
    /// ```
    ///
    /// An error thrown by the operation fails the future. An operation that releases its completion
    /// callback without calling it leaves the future pending until it is cancelled, as in Flow, where
    /// `Future { _ in NilDisposer() }` is a future that never completes; debug builds report it on
    /// the standard error, naming where the future was created. ``Future/init(_:file:line:)-(Future<Value>.Forever,_,_)``
    /// says "never" without the report.
    @preconcurrency
    @inlinable
    public convenience init(
        on scheduler: Scheduler = .current,
        file: StaticString = #fileID, line: UInt = #line,
        onResult operation: @escaping @Sendable (@escaping @Sendable (Result<Value>) -> Void) throws -> Disposable
    ) {
        self.init(initialResult: nil, file: file, line: line)
        let context = ThreadContext.current
        let isImmediate = scheduler.isImmediate(in: context)
        storeRecipe(.plain(consume scheduler, operation))
        startFirstRun(isImmediate: isImmediate, in: context) { completion in try operation(completion) }
    }

    /// Creates a future like ``init(on:file:line:onResult:)``, whose operation also gets a ``Mover``:
    /// futures created outside the operation and moved inside with it are started again when this
    /// future is repeated (see ``Future/onErrorRepeat(on:delayBetweenRepetitions:maxRepetitions:file:line:when:)-(Scheduler,_,_,_,_,_)``).
    ///
    /// ```swift
    /// let login = loginFuture()
    /// let session = Future<Session> { completion, mover in
    ///     mover.moveInside(login).onResult { completion($0) }.disposable
    /// }
    /// session.onErrorRepeat(maxRepetitions: 2)   // logs in again on each repetition
    /// ```
    @preconcurrency
    @inlinable
    public convenience init(
        on scheduler: Scheduler = .current,
        file: StaticString = #fileID, line: UInt = #line,
        onResult operation: @escaping @Sendable (@escaping @Sendable (Result<Value>) -> Void, Mover) throws -> Disposable
    ) {
        self.init(on: scheduler, file: file, line: line, operationWithMover: operation)
    }

    @inlinable
    convenience init(
        on scheduler: Scheduler, file: StaticString, line: UInt,
        operationWithMover operation: @escaping @Sendable (@escaping @Sendable (Result<Value>) -> Void, Mover) throws -> Disposable
    ) {
        self.init(initialResult: nil, file: file, line: line)
        let context = ThreadContext.current
        let isImmediate = scheduler.isImmediate(in: context)
        storeRecipe(.withMover(consume scheduler, operation))
        startFirstRun(isImmediate: isImmediate, in: context) { completion in try operation(completion, .firstRun) }
    }

    /// A future like ``init(on:file:line:operationWithMover:)`` for the library's operations that
    /// complete only through a future they observe (`ignoreCanceling`, `performWhile`): released
    /// uncalled, their callback is not reported, since only that future never completing releases it,
    /// and it was reported where the user created it (or made with `Future(.forever)`).
    @usableFromInline
    convenience init(
        observingOn scheduler: Scheduler, file: StaticString, line: UInt,
        operationWithMover operation: @escaping @Sendable (@escaping @Sendable (Result<Value>) -> Void, Mover) throws -> Disposable
    ) {
        self.init(initialResult: nil, file: file, line: line)
        let context = ThreadContext.current
        let isImmediate = scheduler.isImmediate(in: context)
        storeRecipe(.withMover(consume scheduler, operation))
        #if DEBUG
        reportsAbandonment = false
        #endif
        startFirstRun(isImmediate: isImmediate, in: context) { completion in try operation(completion, .firstRun) }
    }

    /// Runs a new future's operation, whose recipe is stored, the first time: at once when its
    /// scheduler is the current one (`isImmediate`, asked before the initialiser moved the scheduler
    /// into the recipe: reading it back would retain and release it), else on it. `call` calls the
    /// operation directly, as the initialiser received it, rather than through the recipe's stored
    /// copy: in code specialised at the caller, that skips the recipe's switch and its generic
    /// closure representation.
    @inlinable
    final func startFirstRun(
        isImmediate: Bool, in context: ThreadContext,
        _ call: (@escaping @Sendable (Result<Value>) -> Void) throws -> Disposable
    ) {
        guard isImmediate, context.enterImmediateFrame() else {
            OperationRunner.start(self, recipeStorage!, isRepetition: false)
            return
        }
        let callback = makeCompletionCallback()
        do {
            setDisposable(try call(callback))
        } catch {
            complete(with: .failure(error))
        }
        context.exitImmediateFrame()
    }

    /// Creates a future completed with `value`.
    @inlinable
    public convenience init(_ value: Value, file: StaticString = #fileID, line: UInt = #line) {
        self.init(initialResult: .success(value), file: file, line: line)
    }

    /// Creates a future failed with `error`.
    public convenience init(error: Error, file: StaticString = #fileID, line: UInt = #line) {
        self.init(initialResult: .failure(error), file: file, line: line)
    }

    /// Creates a future completed with `result`.
    public convenience init(result: Result<Value>, file: StaticString = #fileID, line: UInt = #line) {
        self.init(initialResult: result, file: file, line: line)
    }

    /// Creates a future that runs `work` on `scheduler` and completes with what it returns or throws.
    ///
    /// ```swift
    /// let thumbnail = Future(on: imageProcessing) { try image.scaled(to: 64) }
    /// ```
    @preconcurrency
    public convenience init(
        on scheduler: Scheduler = .current,
        file: StaticString = #fileID, line: UInt = #line,
        immediate work: @escaping @Sendable () throws -> Value
    ) {
        self.init(on: scheduler, file: file, line: line, operationWithMover: { completion, _ in
            completion(Result { try work() })
            return NilDisposer()
        })
    }

    /// Creates a future that never completes (until cancelled).
    ///
    /// ```swift
    /// select(between: response, or: Future(.forever))   // as if `response` stood alone
    /// ```
    public convenience init(_ forever: Forever, file: StaticString = #fileID, line: UInt = #line) {
        self.init(initialResult: nil, file: file, line: line)
        lockedForeverObserverCount = 0
    }

    /// A future like ``init(on:file:line:onResult:)``, except that if the operation releases
    /// its completion callback without calling it, the future fails with ``FutureAbandonedError``
    /// instead of staying pending: for the library's own operations whose callback is held by a loop
    /// that may be closed (a timer's closure is released uncalled then).
    ///
    /// A static function rather than an initialiser, so that it never competes with the public
    /// initialisers for a trailing closure.
    package static func failingIfAbandoned(
        on scheduler: Scheduler, file: StaticString = #fileID, line: UInt = #line,
        _ operation: @escaping @Sendable (@escaping @Sendable (Result<Value>) -> Void) throws -> Disposable
    ) -> Future<Value> {
        let recipe = OperationRecipe.failingIfAbandoned(scheduler, operation)
        let future = Future(initialResult: nil, file: file, line: line)
        future.storeRecipe(recipe)
        OperationRunner.start(future, recipe, isRepetition: false)
        return future
    }

    /// Flow's name for the marker type of ``init(_:file:line:)-(Future<Value>.Forever,_,_)``.
    public typealias Forever = Flow.Forever
}

extension Future where Value == Void {
    /// Creates a future completed with `()`.
    public convenience init(file: StaticString = #fileID, line: UInt = #line) {
        self.init(initialResult: .success(()), file: file, line: line)
    }
}

/// Moves futures created outside a future's operation inside it, so that they are started again
/// when that future is repeated. See ``Future/init(on:file:line:onResult:)-(_,_,_,((Result<Value>)->Void,Mover)->Disposable)``.
public final class Mover: Sendable {
    @usableFromInline
    let isRepetition: Bool

    init(isRepetition: Bool) { self.isRepetition = isRepetition }

    /// The mover of a first run, and of a repetition: two instances serve every operation.
    @usableFromInline static let firstRun = Mover(isRepetition: false)
    @usableFromInline static let repetition = Mover(isRepetition: true)

    /// Returns `future` on the first run of the operation, and a fresh run of it on each repetition.
    public func moveInside<T>(_ future: Future<T>) -> Future<T> {
        isRepetition ? future.makeFresh() : future
    }
}

/// What is needed to run a future's operation again: its scheduler and the operation as the user
/// wrote it (stored unwrapped, so creating a future allocates no adapter closure). Stored in the
/// future itself: a separate object would cost an allocation for every future made from an operation.
///
/// Every case starts with the scheduler, a class reference: Swift keeps the case in that reference's
/// spare bits, so the recipe takes 24 bytes, optional or not.
@usableFromInline
enum OperationRecipe<Value: Sendable>: Sendable {
    case plain(Scheduler, @Sendable (@escaping @Sendable (Result<Value>) -> Void) throws -> Disposable)
    case withMover(Scheduler, @Sendable (@escaping @Sendable (Result<Value>) -> Void, Mover) throws -> Disposable)
    /// The library's own operations, whose future fails if the callback is released uncalled.
    case failingIfAbandoned(Scheduler, @Sendable (@escaping @Sendable (Result<Value>) -> Void) throws -> Disposable)
    /// The scheduler the operation runs on.
    @inlinable
    var scheduler: Scheduler {
        switch self {
        case .plain(let scheduler, _), .withMover(let scheduler, _), .failingIfAbandoned(let scheduler, _):
            return scheduler
        }
    }

    /// Runs the operation once for `future`.
    @inlinable
    func run(for future: Future<Value>, isRepetition: Bool) {
        do {
            let disposable: Disposable
            switch self {
            case .plain(_, let operation):
                disposable = try operation(future.makeCompletionCallback())
            case .withMover(_, let operation):
                disposable = try operation(future.makeCompletionCallback(), isRepetition ? .repetition : .firstRun)
            case .failingIfAbandoned(_, let operation):
                disposable = try operation(future.makeCompletionCallback())
            }
            future.setDisposable(disposable)
        } catch {
            future.complete(with: .failure(error))
        }
    }
}

/// Starts an operation for a future, on its scheduler.
@usableFromInline
enum OperationRunner {
    @inlinable
    static func start<Value>(_ future: Future<Value>, _ recipe: OperationRecipe<Value>, isRepetition: Bool) {
        let context = ThreadContext.current
        if recipe.scheduler.isImmediate(in: context) {
            // Already there: run now, allocating no closure, unless nested too deep.
            if context.enterImmediateFrame() {
                recipe.run(for: future, isRepetition: isRepetition)
                context.exitImmediateFrame()
            } else {
                context.deferredWork.append { recipe.run(for: future, isRepetition: isRepetition) }
            }
        } else {
            recipe.scheduler.async { recipe.run(for: future, isRepetition: isRepetition) }
        }
    }
}

extension Future {
    /// Makes this future's completion callback and the handle it captures (see
    /// ``CompletionHandle``): once, each time the operation runs.
    @inlinable
    final func makeCompletionCallback() -> @Sendable (Result<Value>) -> Void {
        // The closure captures the handle alone, so the handle is the closure's context: the
        // callback costs the handle's allocation and no other.
        let handle = CompletionHandle(completing: self)
        return { handle.complete(with: $0) }
    }

    /// The operation released its completion callback uncalled: a future the library's operations
    /// made (``failingIfAbandoned(on:file:line:_:)``, whose recipe says so) fails with
    /// ``FutureAbandonedError``; any other stays pending for good, as in Flow, and becomes a
    /// ``Forever`` future, which frees the chain nobody holds any more; debug builds report it.
    final func completionAbandoned() {
        guard !isCompleted else { return }
        #if DEBUG
        let site = creationSite
        #else
        let site = "(creation sites are recorded in debug builds)"
        #endif
        // The recipe was written before the operation first ran, and never changes.
        if case .failingIfAbandoned = recipeStorage {
            complete(with: .failure(FutureAbandonedError(creationSite: site)))
            return
        }
        #if DEBUG
        if reportsAbandonment { AbandonmentReport.report(creationSite: site) }
        #endif
        becomeForever()
    }
}

/// A future whose completion callback can be released uncalled, seen without its value type: a
/// ``CompletionHandle``, which is not generic, tells it through this.
protocol AbandonableFuture: AnyObject {
    func completionAbandoned()
}

extension Future: AbandonableFuture {}

/// The object a future's completion callback captures, and so the callback's context: the callback
/// costs this one allocation (24 bytes) and no other.
///
/// Until its first call, the handle keeps its future (a strong reference, in ``futureAddress``); the
/// call completes the future and lets go of it, since an operation often keeps its callback (in a
/// request object its closure captured) and the future keeps its operation for repetition, so
/// holding on would tie the two together for good. A call claims the future by exchanging the
/// address for zero, so that of calls racing from several threads exactly one completes the future
/// and releases it. Released uncalled, the handle tells the future
/// (``Future/completionAbandoned()``).
///
/// Not generic: a callback made in unspecialised code would otherwise need `Value`'s metadata to
/// make its handle. ``complete(with:)`` is generic instead, and specialised where the callback is
/// made.
@usableFromInline
final class CompletionHandle: Sendable {
    /// The future's address, retained, until the first call takes it; zero after. Kept as an address
    /// rather than a reference so that one atomic exchange both claims it and hands over the
    /// reference.
    @usableFromInline
    let futureAddress: Atomic<UInt>

    /// A handle that keeps `future` until its first call.
    @inlinable
    init(completing future: AnyObject) {
        futureAddress = Atomic(UInt(bitPattern: Unmanaged.passRetained(future).toOpaque()))
    }

    /// Completes the future with `result` on the first call, and lets go of it; does nothing after.
    @inlinable
    func complete<Value: Sendable>(with result: Result<Value>) {
        // Only the first call gets the address, and with it the handle's reference to the future.
        guard let address = UnsafeRawPointer(bitPattern: futureAddress.exchange(0, ordering: .acquiringAndReleasing)) else {
            return
        }
        // Only a `Future<Value>` makes a handle whose callback takes a `Result<Value>`.
        let future = Unmanaged<Future<Value>>.fromOpaque(address).takeRetainedValue()
        future.complete(with: result)
    }

    deinit {
        // Released uncalled: the future learns of it, then the handle's reference to it goes.
        guard let address = UnsafeRawPointer(bitPattern: futureAddress.load(ordering: .acquiring)) else { return }
        let future = Unmanaged<AnyObject>.fromOpaque(address).takeRetainedValue()
        // Only futures make handles: the cast cannot fail.
        (future as! any AbandonableFuture).completionAbandoned()
    }
}

#if DEBUG
/// The debug-build report of a future whose operation released its completion callback uncalled,
/// through ``FlowDiagnostics`` (standard error unless the program set a handler).
enum AbandonmentReport {
    static func report(creationSite: String) {
        FlowDiagnostics.report(
            .warning,
            "the operation of the future created at \(creationSite) released its completion callback without "
                + "calling it; the future stays pending until cancelled (write Future(.forever) for a future "
                + "that never completes)",
            metadata: ["creationSite": creationSite])
    }
}
#endif
