// The fixed-arity `combineLatest`s, 2 to 14 signals, with Flow's signatures: each passes its signals
// to `combineLatestAsTuple`, one generic core over a parameter pack. The signatures themselves cannot
// be one variadic function: their requirement that every signal has the first one's kind is a
// same-element requirement on a pack, which Swift does not support.

/// The latest value of each signal, as a tuple, each time one of them signals (once each has
/// signalled). Readable signals give the combined current values. Ends when one ends.
///
/// ```
/// ---a---b-------c------------|
/// ----------1----------2------|
///     combineLatest() - plain
/// ----------b1---c1----c2-----|
///
/// a)---b---------c-------------|
/// 0)---------1---------2-------|
///     combineLatest() - readable
/// a0)--b0----b1--c1----c2------|
/// ```
public func combineLatest<
    A: SignalProvider, B: SignalProvider
>(
    _ a: A, _ b: B
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider
>(
    _ a: A, _ b: B, _ c: C
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider, H: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite,
    H.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g, h)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider, H: SignalProvider, I: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H, _ i: I
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value, I.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite,
    H.Kind.DropWrite == A.Kind.DropWrite,
    I.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g, h, i)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider, H: SignalProvider, I: SignalProvider, J: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H, _ i: I, _ j: J
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value, I.Value, J.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite,
    H.Kind.DropWrite == A.Kind.DropWrite,
    I.Kind.DropWrite == A.Kind.DropWrite,
    J.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g, h, i, j)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider, H: SignalProvider, I: SignalProvider, J: SignalProvider, K: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H, _ i: I, _ j: J, _ k: K
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value, I.Value, J.Value, K.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite,
    H.Kind.DropWrite == A.Kind.DropWrite,
    I.Kind.DropWrite == A.Kind.DropWrite,
    J.Kind.DropWrite == A.Kind.DropWrite,
    K.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g, h, i, j, k)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider, H: SignalProvider, I: SignalProvider, J: SignalProvider, K: SignalProvider, L: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H, _ i: I, _ j: J, _ k: K, _ l: L
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value, I.Value, J.Value, K.Value, L.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite,
    H.Kind.DropWrite == A.Kind.DropWrite,
    I.Kind.DropWrite == A.Kind.DropWrite,
    J.Kind.DropWrite == A.Kind.DropWrite,
    K.Kind.DropWrite == A.Kind.DropWrite,
    L.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g, h, i, j, k, l)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider, H: SignalProvider, I: SignalProvider, J: SignalProvider, K: SignalProvider, L: SignalProvider,
    M: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H, _ i: I, _ j: J, _ k: K, _ l: L, _ m: M
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value, I.Value, J.Value, K.Value, L.Value, M.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite,
    H.Kind.DropWrite == A.Kind.DropWrite,
    I.Kind.DropWrite == A.Kind.DropWrite,
    J.Kind.DropWrite == A.Kind.DropWrite,
    K.Kind.DropWrite == A.Kind.DropWrite,
    L.Kind.DropWrite == A.Kind.DropWrite,
    M.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g, h, i, j, k, l, m)
}

/// The latest value of each signal, as a tuple, each time one of them signals: see ``combineLatest(_:_:)``.
public func combineLatest<
    A: SignalProvider, B: SignalProvider, C: SignalProvider, D: SignalProvider, E: SignalProvider, F: SignalProvider,
    G: SignalProvider, H: SignalProvider, I: SignalProvider, J: SignalProvider, K: SignalProvider, L: SignalProvider,
    M: SignalProvider, N: SignalProvider
>(
    _ a: A, _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H, _ i: I, _ j: J, _ k: K, _ l: L, _ m: M, _ n: N
) -> CoreSignal<A.Kind.DropWrite, (
    A.Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value, I.Value, J.Value, K.Value, L.Value, M.Value,
    N.Value
)>
where
    B.Kind.DropWrite == A.Kind.DropWrite,
    C.Kind.DropWrite == A.Kind.DropWrite,
    D.Kind.DropWrite == A.Kind.DropWrite,
    E.Kind.DropWrite == A.Kind.DropWrite,
    F.Kind.DropWrite == A.Kind.DropWrite,
    G.Kind.DropWrite == A.Kind.DropWrite,
    H.Kind.DropWrite == A.Kind.DropWrite,
    I.Kind.DropWrite == A.Kind.DropWrite,
    J.Kind.DropWrite == A.Kind.DropWrite,
    K.Kind.DropWrite == A.Kind.DropWrite,
    L.Kind.DropWrite == A.Kind.DropWrite,
    M.Kind.DropWrite == A.Kind.DropWrite,
    N.Kind.DropWrite == A.Kind.DropWrite
{
    combineLatestAsTuple(a, b, c, d, e, f, g, h, i, j, k, l, m, n)
}

/// The core of the fixed-arity `combineLatest`s: the latest value of each of `signals`, as a tuple.
/// One engine (``LatestValues``) over the type-erased inputs; the tuple is rebuilt from its array,
/// whose elements are in the order of `signals`. The caller's signature guarantees that every signal
/// has the kind `Kind` is derived from.
func combineLatestAsTuple<Kind: SignalKind, each Input: SignalProvider>(
    _ signals: repeat each Input
) -> CoreSignal<Kind, (repeat (each Input).Value)> {
    var registers: [LatestValues<any Sendable>.Register] = []
    for signal in repeat each signals {
        registers.append(erasedRegister(signal.providedSignal))
    }
    return latestValueTuples(combining: registers)
}

/// The arrays `LatestValues` combines from `registers` as tuples of `Value`s, the types the inputs'
/// values were erased from, in order. Generic over the values rather than the signals, whose
/// metatypes the delivery closure could not capture (only a `Sendable` type's metatype is).
private func latestValueTuples<Kind: SignalKind, each Value: Sendable>(
    combining registers: [LatestValues<any Sendable>.Register]
) -> CoreSignal<Kind, (repeat each Value)> {
    let combined = LatestValues.combining(registers)
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                var next = values.makeIterator()
                return (repeat takeNext(from: &next, as: (each Value).self))
            })
        }
    })
}

/// The next value of `values`, as the tuple element it was erased from.
private func takeNext<Value>(from values: inout IndexingIterator<[any Sendable]>, as _: Value.Type) -> Value {
    values.next() as! Value
}
