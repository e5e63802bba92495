import Flow

/// The writing side of a value that becomes known later: something that can be filled, once.
///
/// ``Deferred`` is both a promise and a future; hand out a ``Future`` to give others only the
/// reading side.
///
/// ```swift
/// let answer = Deferred<Int>()
/// answer.fill(with: 42)   // true
/// answer.fill(with: 43)   // false: the value stays 42
/// ```
public protocol PromiseProtocol<Value>: Sendable {
    /// The type of the value this promise is filled with.
    associatedtype Value: Sendable

    /// Whether the promise has been filled.
    var isFilled: Bool { get }

    /// Fills the promise with `value` unless it already was filled.
    ///
    /// Of several fills, however they race, exactly one returns `true` and its value is the one
    /// every reader sees.
    ///
    /// - Returns: `true` if this call filled the promise, `false` if it was filled already.
    @discardableResult
    func fill(with value: Value) -> Bool
}

extension PromiseProtocol {
    /// Fills the promise with `value`, stopping the program if it was filled already: for code where
    /// a second fill is a bug.
    ///
    /// - Parameters:
    ///   - value: the value to fill with.
    ///   - file: the file named in the message if it was filled already; the caller's by default.
    ///   - line: the line of `file`.
    public func mustFill(with value: Value, file: StaticString = #file, line: UInt = #line) {
        misusePrecondition(fill(with: value), "mustFill(with:): the promise was already filled", file: file, line: line)
    }
}

extension PromiseProtocol where Value == Void {
    /// Fills a promise of no value: marks the moment something happened.
    ///
    /// - Returns: `true` if this call filled the promise, `false` if it was filled already.
    @discardableResult
    public func fill() -> Bool {
        fill(with: ())
    }
}
