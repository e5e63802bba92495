import Synchronization

/// A result that may take time to produce: a value, or an error.
///
/// A future runs its operation once, as soon as it is created, and keeps the result. Callbacks and
/// transforms registered on it run on a ``Scheduler``: by default the one current where they were
/// registered.
///
/// ```swift
/// func fetchUser(id: Int) -> Future<User> {
///     Future { completion in
///         let request = client.get("/users/\(id)") { completion($0) }
///         return Disposer { request.cancel() }   // runs when done or cancelled
///     }
/// }
///
/// fetchUser(id: 42)
///     .map { user in user.name }
///     .onValue { name in print(name) }
///     .onError { error in print("failed: \(error)") }
/// ```
///
/// Thread safety: a future may be completed, observed and cancelled from any thread at once; every
/// callback runs exactly once, and never while a lock is held.
public class Future<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: all mutable state is `lockedState`, guarded by `lock`. Values cross threads only
    // by being handed to callbacks on the schedulers that asked for them.

    @usableFromInline
    struct State {
        @usableFromInline var result: Result<Value>?
        /// The first continuation, stored inline: most futures have exactly one.
        @usableFromInline var firstListener: (any FutureListener<Value>)?
        @usableFromInline var otherListeners: [any FutureListener<Value>] = []
        /// What to dispose once the future completes or is cancelled (its operation's disposable).
        @usableFromInline var disposable: Disposable?
        /// For a ``Forever`` future: it never delivers a result, so it counts its continuations
        /// instead of holding them (holding them would keep them alive in a cycle for good).
        @usableFromInline var isForever = false
        @usableFromInline var foreverObserverCount: Int32 = 0

        @usableFromInline
        init(result: Result<Value>?) { self.result = result }

        @usableFromInline
        var hasListeners: Bool { firstListener != nil || foreverObserverCount > 0 }
    }

    @usableFromInline
    let lock = FutureLock()

    /// Guarded by `lock`.
    @usableFromInline
    var lockedState: State

    /// For a future made from an operation: how to run it again. Written once, before the future is
    /// shared.
    var recipeStorage: OperationRecipe<Value>?

    #if DEBUG
    let creationFile: StaticString
    let creationLine: UInt
    let liveCountScope: LiveFutureCount?

    /// Where this future was created, for descriptions and abandonment errors.
    var creationSite: String { "\(creationFile):\(creationLine)" }
    #endif

    /// Creates a future holding `result`, or a pending one when `result` is `nil`.
    @usableFromInline
    init(initialResult result: Result<Value>?, file: StaticString, line: UInt, countedLike relative: LiveFutureCount? = nil) {
        lockedState = State(result: result)
        #if DEBUG
        creationFile = file
        creationLine = line
        liveCountScope = LiveFutureCount.current ?? relative
        liveCountScope?.increment()
        #endif
    }

    /// Runs `body` with the state, under the lock.
    @inlinable
    final func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&lockedState)
    }

    /// The live-future counter this future is counted by (debug builds), for futures derived from it.
    var liveCount: LiveFutureCount? {
        #if DEBUG
        return liveCountScope
        #else
        return nil
        #endif
    }

    deinit {
        #if DEBUG
        liveCountScope?.decrement()
        #endif
        // A pending future dropped with its continuations releases them without recursing down a
        // long chain (see `ThreadContext.pendingReleases`). Nothing else references this future now,
        // so its state needs no lock.
        if lockedState.firstListener != nil {
            let context = ThreadContext.current
            context.pendingReleases.append(lockedState.firstListener.take()!)
            while !lockedState.otherListeners.isEmpty {
                context.pendingReleases.append(lockedState.otherListeners.removeLast())
            }
            context.drainPendingReleases()
        }
    }

    // MARK: Completion

    /// Completes the future with `result` unless it already completed. Disposes the operation, then
    /// notifies the continuations in the order they were added.
    ///
    /// - Returns: whether this call completed the future.
    @usableFromInline
    @discardableResult
    final func complete(with result: Result<Value>) -> Bool {
        let taken = withState { state -> (completed: Bool, first: (any FutureListener<Value>)?, others: [any FutureListener<Value>], disposable: Disposable?)? in
            guard state.result == nil else { return nil }
            state.result = result
            let taken = (true, state.firstListener, state.otherListeners, state.disposable)
            state.firstListener = nil
            state.otherListeners = []
            state.disposable = nil
            return taken
        }
        guard let taken else { return false }
        taken.disposable?.dispose()
        if let first = taken.first {
            Future.notify(first, taken.others, of: result)
        }
        return true
    }

    /// Hands `result` to the listeners inside an immediate-execution frame, so that a chain of
    /// completions triggering completions goes to the thread's trampoline instead of the stack.
    @usableFromInline
    static func notify(_ first: any FutureListener<Value>, _ others: [any FutureListener<Value>], of result: Result<Value>) {
        let context = ThreadContext.current
        if context.immediateDepth >= ThreadContext.maximumImmediateDepth {
            context.deferredWork.append {
                first.futureDidComplete(result)
                for listener in others { listener.futureDidComplete(result) }
            }
            return
        }
        context.immediateDepth += 1
        first.futureDidComplete(result)
        for listener in others { listener.futureDidComplete(result) }
        if context.immediateDepth == 1 { context.drainDeferredWork() }
        context.immediateDepth -= 1
    }

    /// Adds a continuation, or hands it the result at once if the future already completed.
    @usableFromInline
    final func addListener(_ listener: any FutureListener<Value>) {
        let completed = withState { state -> Result<Value>? in
            if let result = state.result { return result }
            if state.isForever {
                state.foreverObserverCount += 1
            } else if state.firstListener == nil {
                state.firstListener = listener
            } else {
                state.otherListeners.append(listener)
            }
            return nil
        }
        if let completed {
            Future.notify(listener, [], of: completed)
        }
    }

    /// Stores the disposable of the operation, or disposes it now if the future already completed.
    @usableFromInline
    final func setDisposable(_ disposable: Disposable) {
        let alreadyCompleted = withState { state -> Bool in
            guard state.result == nil else { return true }
            state.disposable = disposable
            return false
        }
        if alreadyCompleted { disposable.dispose() }
    }

    /// The result, if the future has completed.
    public final var result: Result<Value>? { withState { $0.result } }

    /// Whether the future has completed (with a value, an error or by cancellation).
    public final var isCompleted: Bool { withState { $0.result != nil } }

    // MARK: Cancellation

    /// Cancels the future: it completes with ``FutureError/aborted`` and its operation is disposed.
    ///
    /// Ignored once the future has completed or has continuations (others rely on its result). When
    /// the last continuation of a pending future is cancelled, that future is cancelled in turn, and
    /// so on upstream; an upstream future that still has other continuations survives.
    ///
    /// ```swift
    /// let image = download(url).map(decode)
    /// image.cancel()   // cancels the decode step, then the download (nobody else uses it)
    /// ```
    public final func cancel() {
        guard cancelIfUnobserved() else { return }
        Future.cancelUpstream(of: self)
    }

    /// Detaches `cancelled` from what it waits on, cancelling each upstream future left unobserved, and
    /// so on up. Iterative: a cancelled million-step chain must not recurse.
    static func cancelUpstream(of cancelled: any CancellableUpstream) {
        // Listeners are named by identity: holding them here would keep them alive.
        var pending = cancelled.upstreamLinks()
        while let (upstream, listener) = pending.popLast() {
            if upstream.removeListenerAndCancelIfUnobserved(listener) {
                pending.append(contentsOf: upstream.upstreamLinks())
            }
        }
    }

    /// Completes with ``FutureError/aborted`` if pending with no continuation.
    ///
    /// - Returns: whether the future was cancelled.
    final func cancelIfUnobserved() -> Bool {
        let disposable = withState { state -> Disposable?? in
            guard state.result == nil, !state.hasListeners else { return nil }
            state.result = .failure(FutureError.aborted)
            let disposable = state.disposable
            state.disposable = nil
            return .some(disposable)
        }
        guard let disposable else { return false }
        disposable?.dispose()
        didCancel()
        return true
    }

    /// Called once after this future was cancelled by ``cancel()`` (directly or from downstream).
    func didCancel() {}

    /// The futures this one waits on and the listener it registered on each, for cancellation.
    func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)] { [] }

    /// A ``Disposable`` that cancels this future when disposed (and does nothing when released).
    ///
    /// ```swift
    /// bag += image(at: url).disposable
    /// ```
    public final var disposable: Disposable { FutureCancellation(cancel: cancel) }

    // MARK: Repetition

    /// A new future that runs this future's operation (and those of the futures it derives from)
    /// again. A future with nothing to re-run (a completed value, ``Forever``) returns itself.
    func makeFresh() -> Future<Value> {
        guard let recipe = recipeStorage else { return self }
        let fresh = Future(initialResult: nil, file: "(repetition)", line: 0, countedLike: liveCount)
        #if DEBUG
        // Name the original's site: the repetition is the same operation.
        #endif
        fresh.recipeStorage = recipe
        OperationRunner.start(fresh, recipe, isRepetition: true)
        return fresh
    }
}

extension Future: CancellableUpstream {
    final func removeListenerAndCancelIfUnobserved(_ listener: ObjectIdentifier) -> Bool {
        removeListener(listener) && cancelIfUnobserved()
    }

    /// Removes a continuation (it will not be told the result).
    ///
    /// - Returns: whether the future is now pending with no continuation.
    @discardableResult
    final func removeListener(_ listener: ObjectIdentifier) -> Bool {
        withState { state -> Bool in
            guard state.result == nil else { return false }
            if state.isForever {
                state.foreverObserverCount -= 1
            } else if let first = state.firstListener, ObjectIdentifier(first) == listener {
                if state.otherListeners.isEmpty {
                    state.firstListener = nil
                } else {
                    state.firstListener = state.otherListeners.removeFirst()
                }
            } else if let index = state.otherListeners.firstIndex(where: { ObjectIdentifier($0) == listener }) {
                state.otherListeners.remove(at: index)
            }
            return !state.hasListeners
        }
    }
}

extension Future: CustomStringConvertible {
    /// The future's state: its result, or pending (with its creation site in debug builds).
    public var description: String {
        let state: String
        if let result {
            state = "\(result)"
        } else {
            state = "pending"
        }
        #if DEBUG
        return "Future<\(Value.self)>(\(state), created at \(creationSite))"
        #else
        return "Future<\(Value.self)>(\(state))"
        #endif
    }
}

/// A continuation of a future: told the result once, on the completing thread.
@usableFromInline
protocol FutureListener<Input>: AnyObject {
    associatedtype Input
    func futureDidComplete(_ result: Result<Input>)
}

/// A future seen from a continuation that is being cancelled.
protocol CancellableUpstream: AnyObject {
    /// Removes `listener`; if that leaves this future pending with no continuation, cancels it.
    ///
    /// - Returns: whether this future was cancelled.
    func removeListenerAndCancelIfUnobserved(_ listener: ObjectIdentifier) -> Bool
    func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)]
}

/// The disposable of ``Future/disposable``.
private struct FutureCancellation: Disposable {
    let cancel: @Sendable () -> Void
    func dispose() { cancel() }
}

extension DisposeBag {
    /// Adds `future` to `bag`: disposing the bag cancels the future.
    public static func += <Value>(bag: DisposeBag, future: Future<Value>) {
        bag.add(future.disposable)
    }
}
