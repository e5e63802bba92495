/// One input of a ``CombiningFuture``, with its type erased.
struct CombinedInput: Sendable {
    let upstream: any CancellableUpstream & Sendable
    /// Registers a listener that reports the input's result to `combiner` as slot `index`.
    let attach: @Sendable (_ combiner: any SlotReceiver, _ index: Int) -> ObjectIdentifier
    /// The same input, run again (for repetition).
    let fresh: @Sendable () -> CombinedInput

    init<Value>(_ future: Future<Value>) {
        upstream = future
        attach = { combiner, index in
            let slot = CombinedSlot<Value>(combiner: combiner, index: index)
            future.addListener(slot)
            return ObjectIdentifier(slot)
        }
        fresh = { CombinedInput(future.makeFresh()) }
    }
}

/// Receives the results of a combiner's inputs.
protocol SlotReceiver: AnyObject, Sendable {
    func slot(_ index: Int, didComplete result: Result<any Sendable>)
}

/// The listener a combiner puts on one input.
final class CombinedSlot<Value: Sendable>: FutureListener, Sendable {
    let combiner: any SlotReceiver
    let index: Int

    init(combiner: any SlotReceiver, index: Int) {
        self.combiner = combiner
        self.index = index
    }

    func futureDidComplete(_ result: Result<Value>) {
        combiner.slot(index, didComplete: result.map { $0 as any Sendable })
    }
}

/// How a ``CombiningFuture`` turns its inputs' results into its own.
enum CombineRule<Output: Sendable>: Sendable {
    /// Waits for every input; fails at the first failure. Assembles the values in input order.
    case all(@Sendable ([any Sendable]) -> Output)
    /// Completes with the first input to complete, success or failure.
    case first(@Sendable (Int, any Sendable) -> Output)
}

/// The decisions of a combiner, apart from the threads and futures that feed it.
struct CombineStateMachine {
    enum Action: Equatable {
        case none
        /// Complete with every value (in input order).
        case completeWithAll
        /// Complete with slot `index`'s result, then cancel the other inputs if asked to.
        case completeWith(index: Int)
    }

    private(set) var values: [(any Sendable)?]
    private var remaining: Int
    private var isDone = false
    let waitsForAll: Bool

    init(inputCount: Int, waitsForAll: Bool) {
        values = Array(repeating: nil, count: inputCount)
        remaining = inputCount
        self.waitsForAll = waitsForAll
    }

    mutating func slot(_ index: Int, completedWithValue value: (any Sendable)?) -> Action {
        guard !isDone else { return .none }
        guard waitsForAll, let value else {
            // A failure, or the first result of a select: decides the outcome.
            isDone = true
            return .completeWith(index: index)
        }
        values[index] = value
        remaining -= 1
        if remaining == 0 {
            isDone = true
            return .completeWithAll
        }
        return .none
    }
}

/// The future of `join` and `select`: listens to every input and completes by its ``CombineRule``.
final class CombiningFuture<Output: Sendable>: Future<Output>, SlotReceiver, @unchecked Sendable {
    // @unchecked Sendable: `inputs`, `rule` and `cancelNonCompleted` are immutable; `machine` and
    // `slots` are guarded by the inherited lock.
    let inputs: [CombinedInput]
    let rule: CombineRule<Output>
    let cancelNonCompleted: Bool
    private var machine: CombineStateMachine
    /// Each input's listener, by identity (the listeners refer to this future: holding them would be
    /// a cycle).
    private var slots: [ObjectIdentifier] = []
    /// The input whose result decided the outcome (a failure, or a select's winner).
    private var decidedIndex: Int?

    private init(inputs: [CombinedInput], rule: CombineRule<Output>, cancelNonCompleted: Bool, file: StaticString, line: UInt) {
        self.inputs = inputs
        self.rule = rule
        self.cancelNonCompleted = cancelNonCompleted
        if case .all = rule {
            machine = CombineStateMachine(inputCount: inputs.count, waitsForAll: true)
        } else {
            machine = CombineStateMachine(inputCount: inputs.count, waitsForAll: false)
        }
        super.init(initialResult: nil, file: file, line: line)
    }

    static func make(_ inputs: [CombinedInput], rule: CombineRule<Output>, cancelNonCompleted: Bool, file: StaticString, line: UInt) -> CombiningFuture {
        let future = CombiningFuture(inputs: inputs, rule: rule, cancelNonCompleted: cancelNonCompleted, file: file, line: line)
        for (index, input) in inputs.enumerated() {
            let slot = input.attach(future, index)
            future.withLock { future.slots.append(slot) }
        }
        // An input that had already completed may have decided the outcome while later inputs were
        // still being attached: those are cancelled now.
        if cancelNonCompleted, let decided = future.withLock({ future.decidedIndex }) {
            future.cancelInputs(except: decided)
        }
        return future
    }

    func slot(_ index: Int, didComplete result: Result<any Sendable>) {
        let action = withLock { machine.slot(index, completedWithValue: result.value) }
        switch action {
        case .none:
            return
        case .completeWithAll:
            guard case .all(let assemble) = rule else { return }
            let values = withLock { machine.values.map { $0! } }
            complete(with: .success(assemble(values)))
        case .completeWith(let index):
            withLock { decidedIndex = index }
            // The losers are cancelled first, so that code continuing from this future never runs
            // while they still hold their resources.
            if cancelNonCompleted { cancelInputs(except: index) }
            switch (rule, result) {
            case (.first(let pick), .success(let value)):
                complete(with: .success(pick(index, value)))
            case (_, .failure(let error)):
                complete(with: .failure(error))
            case (.all, .success):
                return
            }
        }
    }

    private func cancelInputs(except winner: Int?) {
        let slots = withLock { self.slots }
        for (index, input) in inputs.enumerated() where index != winner && index < slots.count {
            if input.upstream.removeListenerAndCancelIfUnobserved(slots[index]) {
                Future<Output>.cancelUpstream(of: input.upstream)
            }
        }
    }

    override func upstreamLinks() -> [(any CancellableUpstream, ObjectIdentifier)] {
        let slots = withLock { self.slots }
        return zip(inputs, slots).map { ($0.upstream, $1) }
    }

    override func makeFresh() -> Future<Output> {
        CombiningFuture.make(inputs.map { $0.fresh() }, rule: rule, cancelNonCompleted: cancelNonCompleted, file: "(repetition)", line: 0)
    }
}
