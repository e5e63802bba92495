import Flow

extension Collection where Element: FutureProtocol {
    /// A future filled with the values of all these futures, in their order, once all are filled.
    ///
    /// An empty collection gives a future filled with `[]`.
    ///
    /// ```swift
    /// let allDeferreds: Future<[Int]> = deferreds.allFilled()
    /// ```
    public func allFilled() -> Future<[Element.Value]> {
        let expectedCount = count
        guard expectedCount > 0 else {
            return Future(value: [])
        }
        let combined = Deferred<[Element.Value]>()
        let collected = Locked(CollectedValues<Element.Value>(count: expectedCount))
        for (index, future) in enumerated() {
            uponInline(future) { value in
                let values = collected.withLock { $0.record(value, at: index) }
                if let values {
                    combined.fill(with: values)
                }
            }
        }
        return Future(combined)
    }
}

extension Sequence where Element: FutureProtocol {
    /// A future filled with the value of whichever of these futures is filled first.
    ///
    /// When several are filled at about the same time, any of them may win. An empty sequence gives
    /// a future that is never filled.
    ///
    /// ```swift
    /// let anyDeferred: Future<Int> = deferreds.firstFilled()
    /// ```
    public func firstFilled() -> Future<Element.Value> {
        let first = Deferred<Element.Value>()
        for future in self {
            uponInline(future) { first.fill(with: $0) }
            if first.isFilled {
                break
            }
        }
        return Future(first)
    }
}

/// The values of ``Swift/Collection/allFilled()`` as they arrive.
struct CollectedValues<Value: Sendable>: Sendable {
    private var values: [Value?]
    private var missingCount: Int

    init(count: Int) {
        values = Array(repeating: nil, count: count)
        missingCount = count
    }

    /// Records the value at `index`; returns every value once the last one arrived.
    mutating func record(_ value: Value, at index: Int) -> [Value]? {
        values[index] = value
        missingCount -= 1
        guard missingCount == 0 else {
            return nil
        }
        return values.map { $0! }
    }
}
