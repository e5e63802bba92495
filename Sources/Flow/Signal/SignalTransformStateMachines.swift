// The state of the stateful signal transforms (`take`, `skip`, `latestTwo`, `distinct`,
// `enumerate`, `wait(until:)`, `collect`), one value type each, without threads, locks or signals.
// A transform keeps its listener's state in a `Locked` and sends each event to it in one locked
// call; the event returns what to do, and the transform does it (calls its downstream, runs a
// predicate) after the lock is released, so that no user code runs under it. Being plain values,
// these are unit-tested directly.

/// What `take(first:)` does with each event: passes the first `count` values, then ends.
struct TakeFirstStateMachine: Sendable {
    private enum State: Sendable {
        /// Fewer than `count` values passed: `taken` of them.
        case taking(taken: Int)
        /// `count` values passed, or the upstream ended: nothing more passes.
        case ended
    }

    /// What to do with a value.
    enum ValueAction: Equatable, Sendable {
        /// Pass it on.
        case pass
        /// Pass it on, then end: it was the last one.
        case passThenEnd
        /// Drop it: the signal has ended.
        case drop
    }

    /// How many values pass (0 or more).
    let count: Int
    private var state: State = .taking(taken: 0)

    init(count: Int) {
        precondition(count >= 0, "TakeFirstStateMachine: the count must not be negative, not \(count)")
        self.count = count
    }

    /// The listener was registered (after its initial event passed on).
    ///
    /// - Returns: whether to end at once (when no value may pass).
    mutating func didStart() -> Bool {
        guard count == 0, case .taking = state else { return false }
        state = .ended
        return true
    }

    /// A value arrived.
    mutating func receiveValue() -> ValueAction {
        guard case .taking(let taken) = state, taken < count else { return .drop }
        if taken + 1 == count {
            state = .ended
            return .passThenEnd
        }
        state = .taking(taken: taken + 1)
        return .pass
    }

    /// The upstream ended.
    ///
    /// - Returns: whether to pass the end on (not when this transform already ended the signal).
    mutating func receiveEnd() -> Bool {
        guard case .taking(let taken) = state, taken < count else { return false }
        state = .ended
        return true
    }
}

/// What `take(while:)` does: passes events until its predicate rejects a value or the upstream ends.
/// The predicate runs outside the lock, between ``isTaking`` and ``end()``.
struct TakeWhileStateMachine: Sendable {
    private enum State: Sendable {
        case taking
        case ended
    }

    private var state: State = .taking

    /// Whether events still pass.
    var isTaking: Bool {
        if case .taking = state { return true }
        return false
    }

    /// The predicate rejected a value, or the upstream ended.
    ///
    /// - Returns: whether to send the end downstream (only the first time).
    mutating func end() -> Bool {
        guard case .taking = state else { return false }
        state = .ended
        return true
    }
}

/// What `skip(first:)` does with each value: drops the first `count`.
struct SkipFirstStateMachine: Sendable {
    /// Values still to drop.
    private var remaining: Int

    init(count: Int) {
        remaining = max(count, 0)
    }

    /// A value arrived.
    ///
    /// - Returns: whether to pass it on.
    mutating func receiveValue() -> Bool {
        guard remaining > 0 else { return true }
        remaining -= 1
        return false
    }
}

/// What `skip(until:)` does: drops values until its predicate accepts one, then passes every value.
/// The predicate runs outside the lock, between ``isPassing`` and ``startPassing()``.
struct SkipUntilStateMachine: Sendable {
    private enum State: Sendable {
        case skipping
        case passing
    }

    private var state: State = .skipping

    /// Whether values pass without asking the predicate.
    var isPassing: Bool {
        if case .passing = state { return true }
        return false
    }

    /// The predicate accepted a value: it and every later one pass.
    mutating func startPassing() {
        state = .passing
    }
}

/// The value before the current one, for `latestTwo` and `distinct`.
struct PreviousValueStateMachine<Value> {
    private var previous: Value?

    init() {}

    /// The listener was registered: a readable signal's current value (`initial`) counts as the one
    /// before the first value.
    mutating func start(with initial: Value?) {
        previous = initial
    }

    /// A value arrived: it becomes the previous one.
    ///
    /// - Returns: the value before it, or `nil` for the first value.
    mutating func receive(_ value: Value) -> Value? {
        defer { previous = value }
        return previous
    }
}

extension PreviousValueStateMachine: Sendable where Value: Sendable {}

/// The positions `enumerate` gives the values, from 0.
struct EnumerationStateMachine: Sendable {
    private var nextIndex = 0

    /// A value arrived.
    ///
    /// - Returns: its position.
    mutating func receiveValue() -> Int {
        defer { nextIndex += 1 }
        return nextIndex
    }
}

/// What `wait(until:)` does: holds values back while its gate signal is false, keeping the last one,
/// and lets that one through when the gate opens. The gate and the values may arrive on different
/// threads: both events go through the same lock, so a value held as the gate opens is not left
/// behind.
struct HeldUntilOpenStateMachine<Value> {
    fileprivate enum State {
        /// The gate is closed; the last value that arrived since it closed, if any.
        case closed(held: Value?)
        /// The gate is open: values pass at once.
        case open
    }

    private var state: State = .closed(held: nil)

    init() {}

    /// The gate signal has a new value.
    ///
    /// - Returns: the value to send now, held while the gate was closed, if it just opened.
    mutating func gateChanged(isOpen: Bool) -> Value? {
        switch (state, isOpen) {
        case (.closed(let held), true):
            state = .open
            return held
        case (.open, false):
            state = .closed(held: nil)
            return nil
        case (.closed, false), (.open, true):
            return nil
        }
    }

    /// A value arrived.
    ///
    /// - Returns: the value to send now (the gate is open), or `nil` when it is held instead.
    mutating func receive(_ value: Value) -> Value? {
        switch state {
        case .open:
            return value
        case .closed:
            state = .closed(held: value)
            return nil
        }
    }
}

extension HeldUntilOpenStateMachine: Sendable where Value: Sendable {}
extension HeldUntilOpenStateMachine.State: Sendable where Value: Sendable {}

/// The values `collect` gathers until the end.
struct CollectionStateMachine<Value> {
    private var values: [Value] = []

    init() {}

    /// A value arrived.
    mutating func receive(_ value: Value) {
        values.append(value)
    }

    /// The upstream ended.
    ///
    /// - Returns: every value so far, in order; the state starts empty again.
    mutating func finish() -> [Value] {
        defer { values = [] }
        return values
    }
}

extension CollectionStateMachine: Sendable where Value: Sendable {}
