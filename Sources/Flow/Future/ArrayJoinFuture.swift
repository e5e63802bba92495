/// The future of `join(_: [Future<Value>])`: waits for every input, fails at the first failure, and
/// assembles the values in input order.
///
/// Unlike ``CombiningFuture`` (tuples, `select`), every input has the same type, so nothing is
/// type-erased: each input costs one listener object, and the values go straight into their slots.
@usableFromInline
final class ArrayJoinFuture<Value: Sendable>: Future<[Value]>, @unchecked Sendable {
    // @unchecked Sendable: `inputs` and `cancelNonCompleted` are immutable; the other fields are
    // guarded by the inherited lock.
    @usableFromInline let inputs: [Future<Value>]
    @usableFromInline let cancelNonCompleted: Bool
    /// Each input's value, once it has one.
    @usableFromInline @exclusivity(unchecked) var values: [Value?]
    @usableFromInline @exclusivity(unchecked) var remaining: Int
    /// Set once the outcome is known: every value arrived, or an input failed.
    @usableFromInline @exclusivity(unchecked) var isDecided = false
    /// Each input's listener, by identity (the listeners refer to this future: holding them would be
    /// a cycle). Appended before the listener is added, so that it is known when the input calls back
    /// at once.
    @usableFromInline @exclusivity(unchecked) var slots: [ObjectIdentifier] = []
    /// The input whose failure decided the outcome.
    @usableFromInline @exclusivity(unchecked) var failedIndex: Int?

    @inlinable
    init(inputs: [Future<Value>], cancelNonCompleted: Bool, file: StaticString, line: UInt) {
        self.inputs = inputs
        self.cancelNonCompleted = cancelNonCompleted
        values = Array(repeating: nil, count: inputs.count)
        remaining = inputs.count
        super.init(initialResult: nil, file: file, line: line)
        slots.reserveCapacity(inputs.count)
    }

    /// Joins non-empty `inputs` and starts listening to each of them.
    @inlinable
    static func make(_ inputs: [Future<Value>], cancelNonCompleted: Bool, file: StaticString, line: UInt) -> ArrayJoinFuture {
        let future = ArrayJoinFuture(inputs: inputs, cancelNonCompleted: cancelNonCompleted, file: file, line: line)
        for (index, input) in inputs.enumerated() {
            let slot = ArrayJoinSlot(combiner: future, index: index)
            future.withLock { future.slots.append(ObjectIdentifier(slot)) }
            input.addListener(slot)
        }
        // An input that had already failed decided the outcome while later inputs were still being
        // attached: those are cancelled now.
        if future.cancelNonCompleted, let failed = future.withLock({ future.failedIndex }) {
            future.cancelInputs(except: failed)
        }
        return future
    }

    @inlinable
    func slot(_ index: Int, didComplete result: Result<Value>) {
        switch result {
        case .success(let value):
            let joined = withLock { () -> [Value]? in
                guard !isDecided else { return nil }
                values[index] = value
                remaining -= 1
                guard remaining == 0 else { return nil }
                isDecided = true
                return values.map { $0! }
            }
            if let joined { complete(with: .success(joined)) }
        case .failure(let error):
            let decides = withLock { () -> Bool in
                guard !isDecided else { return false }
                isDecided = true
                failedIndex = index
                return true
            }
            guard decides else { return }
            // The other inputs are cancelled first, so that code continuing from this future never
            // runs while they still hold their resources.
            if cancelNonCompleted { cancelInputs(except: index) }
            complete(with: .failure(error))
        }
    }

    @usableFromInline
    func cancelInputs(except failed: Int) {
        let slots = withLock { self.slots }
        for (index, input) in inputs.enumerated() where index != failed && index < slots.count {
            if input.removeListenerAndCancelIfUnobserved(slots[index]) {
                Future<Value>.cancelUpstream(of: input)
            }
        }
    }

    override func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)] {
        let slots = withLock { self.slots }
        return zip(inputs, slots).map { ($0, $1) }
    }

    override func makeFresh() -> Future<[Value]> {
        ArrayJoinFuture.make(inputs.map { $0.makeFresh() }, cancelNonCompleted: cancelNonCompleted, file: "(repetition)", line: 0)
    }
}

/// The listener an ``ArrayJoinFuture`` puts on one input.
@usableFromInline
final class ArrayJoinSlot<Value: Sendable>: FutureListener, Sendable {
    @usableFromInline let combiner: ArrayJoinFuture<Value>
    @usableFromInline let index: Int

    @inlinable
    init(combiner: ArrayJoinFuture<Value>, index: Int) {
        self.combiner = combiner
        self.index = index
    }

    @inlinable
    func futureDidComplete(_ result: Result<Value>) {
        combiner.slot(index, didComplete: result)
    }
}
