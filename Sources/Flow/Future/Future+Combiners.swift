/// A future of both values, once both futures succeed; fails as soon as either fails.
///
/// ```swift
/// let friendAndPet = join(friend, pet)   // Future<(Friend, Pet)>
/// ```
///
/// - Parameters:
///   - a: the first future.
///   - b: the second future.
///   - cancelNonCompleted: on a failure, cancel the other future (unless others observe it).
///   - file: where the returned future was created, for descriptions and abandonment errors (debug
///     builds); the caller's by default.
///   - line: the line of `file`.
@discardableResult
public func join<A, B>(
    _ a: Future<A>, _ b: Future<B>, cancelNonCompleted: Bool = true,
    file: StaticString = #fileID, line: UInt = #line
) -> Future<(A, B)> {
    CombiningFuture.make([CombinedInput(a), CombinedInput(b)], rule: .all { values in
        (values[0] as! A, values[1] as! B)
    }, cancelNonCompleted: cancelNonCompleted, file: file, line: line)
}

/// A future of three values, once all three futures succeed; fails as soon as one fails.
@discardableResult
public func join<A, B, C>(
    _ a: Future<A>, _ b: Future<B>, _ c: Future<C>, cancelNonCompleted: Bool = true,
    file: StaticString = #fileID, line: UInt = #line
) -> Future<(A, B, C)> {
    CombiningFuture.make([CombinedInput(a), CombinedInput(b), CombinedInput(c)], rule: .all { values in
        (values[0] as! A, values[1] as! B, values[2] as! C)
    }, cancelNonCompleted: cancelNonCompleted, file: file, line: line)
}

/// A future of every future's value, in the order given, once all succeed; fails as soon as one
/// fails. An empty array gives a future of `[]`.
///
/// ```swift
/// let pages: Future<[Page]> = join(urls.map(fetchPage))
/// ```
@inlinable
@discardableResult
public func join<Value>(
    _ futures: [Future<Value>], cancelNonCompleted: Bool = true,
    file: StaticString = #fileID, line: UInt = #line
) -> Future<[Value]> {
    if futures.isEmpty { return Future([], file: file, line: line) }
    return ArrayJoinFuture.make(futures, cancelNonCompleted: cancelNonCompleted, file: file, line: line)
}

/// A future of the first of two futures to complete: its value as `.left` or `.right`, or its error.
///
/// ```swift
/// let friendOrPet = select(friend, or: pet)   // Future<Either<Friend, Pet>>
/// ```
///
/// - Parameters:
///   - a: the first future: its value comes as `.left`.
///   - b: the second future: its value comes as `.right`.
///   - cancelNonCompleted: cancel the other future once one completes (unless others observe it).
///   - file: where the returned future was created, for descriptions and abandonment errors (debug
///     builds); the caller's by default.
///   - line: the line of `file`.
@discardableResult
public func select<A, B>(
    _ a: Future<A>, or b: Future<B>, cancelNonCompleted: Bool = true,
    file: StaticString = #fileID, line: UInt = #line
) -> Future<Either<A, B>> {
    CombiningFuture.make([CombinedInput(a), CombinedInput(b)], rule: .first { index, value in
        index == 0 ? .left(value as! A) : .right(value as! B)
    }, cancelNonCompleted: cancelNonCompleted, file: file, line: line)
}

/// A future of the first of `futures` to complete, with its value or error.
///
/// - Precondition: `futures` is not empty (nothing could ever complete).
@discardableResult
public func select<Value>(
    between futures: [Future<Value>], cancelNonCompleted: Bool = true,
    file: StaticString = #fileID, line: UInt = #line
) -> Future<Value> {
    misusePrecondition(!futures.isEmpty, "select(between:) needs at least one future: with none, it could never complete")
    return CombiningFuture.make(futures.map(CombinedInput.init), rule: .first { _, value in
        value as! Value
    }, cancelNonCompleted: cancelNonCompleted, file: file, line: line)
}

extension Future {
    /// A future of both values, this future's and `other`'s: ``join(_:_:cancelNonCompleted:file:line:)``.
    @discardableResult
    public final func join<Other>(with other: Future<Other>, cancelNonCompleted: Bool = true) -> Future<(Value, Other)> {
        Flow.join(self, other, cancelNonCompleted: cancelNonCompleted)
    }

    /// The first of this future and `other` to complete: ``select(_:or:cancelNonCompleted:file:line:)``.
    @discardableResult
    public final func select<Other>(between other: Future<Other>, cancelNonCompleted: Bool = true) -> Future<Either<Value, Other>> {
        Flow.select(self, or: other, cancelNonCompleted: cancelNonCompleted)
    }
}
