// The fixed-arity `combineLatest`s, 2 to 14 signals: one engine (`LatestValues`) over type-erased
// inputs, with the tuple rebuilt from the array. Written from one pattern; keep them alike.

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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal), erasedRegister(h.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value, values[7] as! H.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal), erasedRegister(h.providedSignal), erasedRegister(i.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value, values[7] as! H.Value,
                    values[8] as! I.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal), erasedRegister(h.providedSignal), erasedRegister(i.providedSignal),
        erasedRegister(j.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value, values[7] as! H.Value,
                    values[8] as! I.Value, values[9] as! J.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal), erasedRegister(h.providedSignal), erasedRegister(i.providedSignal),
        erasedRegister(j.providedSignal), erasedRegister(k.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value, values[7] as! H.Value,
                    values[8] as! I.Value, values[9] as! J.Value, values[10] as! K.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal), erasedRegister(h.providedSignal), erasedRegister(i.providedSignal),
        erasedRegister(j.providedSignal), erasedRegister(k.providedSignal), erasedRegister(l.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value, values[7] as! H.Value,
                    values[8] as! I.Value, values[9] as! J.Value, values[10] as! K.Value, values[11] as! L.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal), erasedRegister(h.providedSignal), erasedRegister(i.providedSignal),
        erasedRegister(j.providedSignal), erasedRegister(k.providedSignal), erasedRegister(l.providedSignal),
        erasedRegister(m.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value, values[7] as! H.Value,
                    values[8] as! I.Value, values[9] as! J.Value, values[10] as! K.Value, values[11] as! L.Value,
                    values[12] as! M.Value
                )
            })
        }
    })
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
    let combined = LatestValues.combining([
        erasedRegister(a.providedSignal), erasedRegister(b.providedSignal), erasedRegister(c.providedSignal),
        erasedRegister(d.providedSignal), erasedRegister(e.providedSignal), erasedRegister(f.providedSignal),
        erasedRegister(g.providedSignal), erasedRegister(h.providedSignal), erasedRegister(i.providedSignal),
        erasedRegister(j.providedSignal), erasedRegister(k.providedSignal), erasedRegister(l.providedSignal),
        erasedRegister(m.providedSignal), erasedRegister(n.providedSignal)
    ])
    return CoreSignal(register: { callback in
        combined { eventType in
            callback(eventType.map { values in
                (
                    values[0] as! A.Value, values[1] as! B.Value, values[2] as! C.Value, values[3] as! D.Value,
                    values[4] as! E.Value, values[5] as! F.Value, values[6] as! G.Value, values[7] as! H.Value,
                    values[8] as! I.Value, values[9] as! J.Value, values[10] as! K.Value, values[11] as! L.Value,
                    values[12] as! M.Value, values[13] as! N.Value
                )
            })
        }
    })
}
