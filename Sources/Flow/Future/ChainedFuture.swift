/// What a derived future does with its upstream's result, and the scheduler it does it on. The user's
/// closure is stored as given, so deriving a future allocates nothing beyond the future itself.
///
/// Every case starts with the scheduler, a class reference: Swift keeps the case in that reference's
/// spare bits, so a step takes 24 bytes. A step enum (17 bytes with its tag, 24 with padding) next to
/// a scheduler field took 32.
@usableFromInline
enum ChainStep<Input: Sendable, Output: Sendable>: Sendable {
    case map(Scheduler, @Sendable (Input) throws -> Output)
    case mapResult(Scheduler, @Sendable (Result<Input>) throws -> Output)
    case flatMap(Scheduler, @Sendable (Input) throws -> Future<Output>)
    case flatMapResult(Scheduler, @Sendable (Result<Input>) throws -> Future<Output>)
    /// Output == Input: recovers from an error with a value.
    case mapError(Scheduler, @Sendable (Error) throws -> Output)
    /// Output == Input: recovers from an error with a future.
    case flatMapError(Scheduler, @Sendable (Error) throws -> Future<Output>)
    /// Output == Input: observers, which pass the result through.
    case onValue(Scheduler, @Sendable (Input) throws -> Void)
    case onError(Scheduler, @Sendable (Error) throws -> Void)
    case onResult(Scheduler, @Sendable (Result<Input>) throws -> Void)
    /// Runs when this future is cancelled (not when its upstream fails with `FutureError.aborted`).
    case onCancel(Scheduler, @Sendable () -> Void)
    /// Runs with the error on an error, and with nil when this future is cancelled.
    case onErrorOrCancel(Scheduler, @Sendable (Error?) -> Void)

    /// The scheduler the step runs on.
    @inlinable
    var scheduler: Scheduler {
        switch self {
        case .map(let scheduler, _), .mapResult(let scheduler, _), .flatMap(let scheduler, _),
             .flatMapResult(let scheduler, _), .mapError(let scheduler, _), .flatMapError(let scheduler, _),
             .onValue(let scheduler, _), .onError(let scheduler, _), .onResult(let scheduler, _),
             .onCancel(let scheduler, _), .onErrorOrCancel(let scheduler, _):
            return scheduler
        }
    }
}

/// A future derived from another by a ``ChainStep``, run on a scheduler when the upstream completes.
/// It is itself the upstream's listener, so a continuation costs one object.
@usableFromInline
final class ChainedFuture<Input: Sendable, Output: Sendable>: Future<Output>, FutureListener, @unchecked Sendable {
    // @unchecked Sendable: `upstream` and `step` are immutable; `lockedInner` is guarded by the
    // inherited lock.
    //
    // Layout: the base future's 88 bytes, the upstream (8) and the step with its scheduler (24): 120
    // bytes, a 128-byte malloc chunk (136 bytes, a 144-byte chunk, while the base future kept its
    // first continuation in a field of its own; 168 bytes, a 176-byte chunk, with a scheduler field,
    // the step's tag and padding, and a field for the flatMap's inner future).
    /// Kept for repetition (a fresh run re-derives from a fresh upstream) and for cancellation;
    /// optional only so that the deinitialiser can move it out. Typed `AnyObject` so that the
    /// (unspecialised) deinitialiser handles it without looking up `Future<Input>`'s metadata.
    @usableFromInline @exclusivity(unchecked) var upstreamStorage: AnyObject?
    @usableFromInline var upstream: Future<Input> { unsafeDowncast(upstreamStorage!, to: Future<Input>.self) }
    @usableFromInline let step: ChainStep<Input, Output>

    /// The scheduler the step runs on.
    @inlinable
    var scheduler: Scheduler { step.scheduler }

    /// For flatMap steps: the future the step returned, which this future listens to. Kept in the
    /// recipe slot, which a derived future does not otherwise use (8 bytes less per derived future
    /// than a field of its own). Read and written under the lock.
    @inlinable
    var lockedInner: Future<Output>? {
        get {
            guard case .boundInner(let future) = recipeStorage else { return nil }
            return future
        }
        set { recipeStorage = newValue.map { .boundInner($0) } }
    }

    @inlinable
    init(upstream: Future<Input>, step: ChainStep<Input, Output>, file: StaticString, line: UInt) {
        upstreamStorage = upstream
        self.step = step
        super.init(initialResult: nil, file: file, line: line, countedLike: upstream.liveCount)
    }

    /// Derives a future from `upstream` and starts listening to it.
    @inlinable
    static func make(
        _ upstream: Future<Input>, _ step: ChainStep<Input, Output>, file: StaticString, line: UInt
    ) -> ChainedFuture {
        let future = ChainedFuture(upstream: upstream, step: step, file: file, line: line)
        upstream.addListener(future)
        return future
    }

    deinit {
        // Releasing the last reference to a long chain must not recurse: move it to the thread's
        // release queue. Shared upstreams are simply released.
        guard isKnownUniquelyReferenced(&upstreamStorage) else { return }
        let context = ThreadContext.current
        context.pendingReleases.append(upstreamStorage.take()!)
        context.drainPendingReleases()
    }

    @inlinable
    func futureDidComplete(_ result: Result<Input>) {
        let scheduler = self.scheduler
        if scheduler.isImmediate(in: ThreadContext.current) {
            run(result)
        } else {
            scheduler.enqueue { [self] in run(result) }
        }
    }

    @inlinable
    func run(_ result: Result<Input>) {
        if isCompleted { return }  // cancelled meanwhile
        switch step {
        case .map(_, let transform):
            switch result {
            case .success(let value): complete(with: Result { try transform(value) })
            case .failure(let error): complete(with: .failure(error))
            }
        case .mapResult(_, let transform):
            complete(with: Result { try transform(result) })
        case .flatMap(_, let transform):
            switch result {
            case .success(let value):
                do { bind(try transform(value)) } catch { complete(with: .failure(error)) }
            case .failure(let error):
                complete(with: .failure(error))
            }
        case .flatMapResult(_, let transform):
            do { bind(try transform(result)) } catch { complete(with: .failure(error)) }
        case .mapError(_, let transform):
            switch result {
            case .success: complete(with: passThrough(result))
            case .failure(let error): complete(with: Result { try transform(error) })
            }
        case .flatMapError(_, let transform):
            switch result {
            case .success:
                complete(with: passThrough(result))
            case .failure(let error):
                do { bind(try transform(error)) } catch { complete(with: .failure(error)) }
            }
        case .onValue(_, let observe):
            if case .success(let value) = result {
                do { try observe(value) } catch { complete(with: .failure(error)); return }
            }
            complete(with: passThrough(result))
        case .onError(_, let observe):
            if case .failure(let error) = result {
                do { try observe(error) } catch { complete(with: .failure(error)); return }
            }
            complete(with: passThrough(result))
        case .onResult(_, let observe):
            do { try observe(result) } catch { complete(with: .failure(error)); return }
            complete(with: passThrough(result))
        case .onCancel:
            complete(with: passThrough(result))
        case .onErrorOrCancel(_, let observe):
            if case .failure(let error) = result { observe(error) }
            complete(with: passThrough(result))
        }
    }

    /// The upstream's result as this future's: only for steps whose Output is their Input.
    @inlinable
    func passThrough(_ result: Result<Input>) -> Result<Output> {
        // The observer and error-recovery initialisers below only ever create ChainedFuture<T, T>.
        unsafeBitCast(result, to: Result<Output>.self)
    }

    /// Completes with `future`'s result once it has one.
    @inlinable
    func bind(_ future: Future<Output>) {
        if let result = future.result {
            complete(with: result)
            return
        }
        // This future listens to the returned one itself: a closure capturing only `self` needs no
        // allocation, where a separate forwarding object would.
        let isStillPending = withLock { () -> Bool in
            guard !lockedIsCompleted else { return false }
            lockedInner = future
            return true
        }
        if isStillPending {
            let listener = Future<Output>.Listener(id: ObjectIdentifier(self), receive: { [self] result in
                innerDidComplete(with: result)
            })
            let isForever = future.addListener(listener)
            // The step returned a future that never completes: so does this one.
            if isForever { becomeForever() }
        } else {
            future.cancelQuietly()  // cancelled while the step ran: the returned future is not needed
        }
    }

    /// Completes with the result of the future a flatMap step returned, and lets go of it: a finished
    /// link is not needed for cancellation, and keeping it would chain recursive flatMaps together.
    @inlinable
    func innerDidComplete(with result: Result<Output>) {
        let finished = withLock { () -> Future<Output>? in
            defer { lockedInner = nil }
            return lockedInner
        }
        complete(with: result)
        _ = finished
    }

    override func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)] {
        if let inner = withLock({ lockedInner }) {
            return [(inner, ObjectIdentifier(self))]
        }
        return [(upstream, ObjectIdentifier(self))]
    }

    override var hasCancellationWork: Bool {
        switch step {
        case .onCancel, .onErrorOrCancel: return true
        default: return false
        }
    }

    override func didCancel() {
        switch step {
        case .onCancel(let scheduler, let observe):
            scheduler.async(execute: observe)
        case .onErrorOrCancel(let scheduler, let observe):
            scheduler.async { observe(nil) }
        default:
            break
        }
    }

    override func makeFresh() -> Future<Output> {
        ChainedFuture.make(upstream.makeFresh(), step, file: "(repetition)", line: 0)
    }
}

extension ChainedFuture: CompletesOnlyThroughWhatItListensTo {}
