/// What a derived future does with its upstream's result, and the scheduler it does it on. The user's
/// closure is stored as given, so deriving a future allocates nothing beyond the future itself.
///
/// Every case starts with the scheduler, a class reference: Swift keeps the case in that reference's
/// spare bits, so a step takes 24 bytes, as a recipe does.
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
    // @unchecked Sendable: the upstream, the step's scheduler identity and the step (in the recipe
    // slot) are written once, before the future is shared, and the upstream is taken out only by the
    // deinitialiser; `lockedInner` is guarded by the inherited lock.
    //
    // Layout: the base future's fields, then the upstream and the step scheduler's identity (88
    // bytes, a 96-byte malloc chunk). The step, with its scheduler, takes the recipe slot, which a
    // derived future has no other use for, and a flatMap's inner future the state word's slot, which
    // holds an operation's disposable in a future made from one (see ``FutureLayout``).

    /// The future this one derives from, kept for repetition (a fresh run re-derives from a fresh
    /// upstream) and for cancellation. Typed `AnyObject` so that the unspecialised deinitialiser,
    /// which hands a last reference to the thread's release queue, needs no metadata of
    /// `Future<Input>`.
    @usableFromInline @exclusivity(unchecked)
    var upstreamObject: AnyObject?

    /// The ``Scheduler/identity`` of the step's scheduler: the usual completion, on that scheduler,
    /// is told by it (``ThreadContext/currentSchedulerHasIdentity(_:)``) without reading the
    /// scheduler out of the step.
    @usableFromInline
    let stepSchedulerIdentity: ObjectIdentifier

    /// The future this one derives from.
    @inlinable
    var upstream: Future<Input> {
        unsafeDowncast(upstreamObject.unsafelyUnwrapped, to: Future<Input>.self)
    }

    /// What this future does with its upstream's result, kept in the base future's recipe slot
    /// (``Future/recipeSlot``), which a derived future has no other use for: a step, like a
    /// recipe, is a scheduler and a closure, 24 bytes whatever the types (see ``ChainStep``). Read in
    /// place: a `switch` over `pointee` borrows the step, where reading a copy would retain and
    /// release its scheduler and closure.
    @inlinable
    var stepAddress: UnsafeMutablePointer<ChainStep<Input, Output>> {
        recipeSlotAddress.assumingMemoryBound(to: ChainStep<Input, Output>.self)
    }

    /// The step, copied.
    @inlinable
    var step: ChainStep<Input, Output> { stepAddress.pointee }

    /// The scheduler the step runs on.
    @inlinable
    var scheduler: Scheduler { stepAddress.pointee.scheduler }

    /// For flatMap steps: the future the step returned, which this future listens to, in the
    /// state word's slot (see ``Future/lockedSlotObject``). Read and written under the lock; it
    /// stays there when this future is cancelled, for the cancellation to go on to it.
    @inlinable
    var lockedInner: Future<Output>? {
        get {
            guard lockedState & FutureStateBits.hasInner != 0 else { return nil }
            return unsafeDowncast(lockedSlotObject!, to: Future<Output>.self)
        }
        set {
            if let newValue {
                lockedSetSlotObject(newValue, flag: FutureStateBits.hasInner)
            } else if lockedState & FutureStateBits.hasInner != 0 {
                _ = lockedTakeSlotObject()
            }
        }
    }

    @inlinable
    init(
        upstream: Future<Input>, schedulerIdentity: ObjectIdentifier, step: consuming ChainStep<Input, Output>,
        file: StaticString, line: UInt
    ) {
        upstreamObject = upstream
        stepSchedulerIdentity = schedulerIdentity
        super.init(initialResult: nil, file: file, line: line, countedLike: upstream.liveCount)
        FutureLayout.checkStepFitsRecipeSlot(ChainStep<Input, Output>.self)
        // Over the `nil` the base initialiser stored, which needs no destroying.
        stepAddress.initialize(to: step)
    }

    /// Derives a future from `upstream` and starts listening to it. `schedulerIdentity` is the
    /// ``Scheduler/identity`` of the step's scheduler, read by the caller before it moved the
    /// scheduler into the step.
    @inlinable
    static func make(
        _ upstream: Future<Input>, _ schedulerIdentity: ObjectIdentifier, _ step: consuming ChainStep<Input, Output>,
        file: StaticString, line: UInt
    ) -> ChainedFuture {
        let future = ChainedFuture(
            upstream: upstream, schedulerIdentity: schedulerIdentity, step: step, file: file, line: line)
        upstream.addListener(future)
        return future
    }

    deinit {
        // The step goes, and the recipe slot gets back the `nil` the base future destroys. Neither
        // layout depends on the types, so both are handled as their `Never` forms: with the generic
        // types, this unspecialised code would look their metadata up for every future freed.
        withUnsafeMutablePointer(to: &recipeSlot) { slot in
            let raw = UnsafeMutableRawPointer(slot)
            _ = raw.assumingMemoryBound(to: ChainStep<Never, Never>.self).move()
            slot.initialize(to: nil)
        }
        // Releasing the last reference to a long chain must not recurse: move it to the thread's
        // release queue. Shared upstreams are simply released.
        guard isKnownUniquelyReferenced(&upstreamObject) else { return }
        let context = ThreadContext.current
        context.pendingReleases.append(upstreamObject.take()!)
        context.drainPendingReleases()
    }

    @inlinable
    func futureDidComplete(_ result: Result<Input>) {
        // The usual case, the step's scheduler running this thread's work, is told by the identity
        // kept beside the upstream: reading the scheduler out of the step retains and releases it.
        let context = ThreadContext.current
        if context.currentSchedulerHasIdentity(UInt(bitPattern: stepSchedulerIdentity)) || scheduler.isImmediate(in: context) {
            run(result)
        } else {
            scheduler.enqueue { [self] in run(result) }
        }
    }

    @inlinable
    func run(_ result: Result<Input>) {
        if isCompleted { return }  // cancelled meanwhile
        switch stepAddress.pointee {
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
        let finished = withLock { () -> AnyObject? in
            guard lockedState & FutureStateBits.hasInner != 0 else { return nil }
            return lockedTakeSlotObject()
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
        switch stepAddress.pointee {
        case .onCancel, .onErrorOrCancel: return true
        default: return false
        }
    }

    override func didCancel() {
        switch stepAddress.pointee {
        case .onCancel(let scheduler, let observe):
            scheduler.async(execute: observe)
        case .onErrorOrCancel(let scheduler, let observe):
            scheduler.async { observe(nil) }
        default:
            break
        }
    }

    override func makeFresh() -> Future<Output> {
        ChainedFuture.make(
            upstream.makeFresh(), stepSchedulerIdentity, step,
            file: "(repetition)", line: 0)
    }
}

extension ChainedFuture: CompletesOnlyThroughWhatItListensTo {}
