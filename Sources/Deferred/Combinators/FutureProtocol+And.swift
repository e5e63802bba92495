/// Combining futures of different types into one future of a tuple.
extension FutureProtocol {
    /// A future filled with a tuple of this future's value and the values of `b`, once
    /// all are filled.
    ///
    /// ```swift
    /// let dBoth: Future<(Int, String)> = d1.and(d2)
    /// ```
    ///
    /// The tuple is made on the thread that fills the last of them.
    @inlinable
    public func and<B: FutureProtocol>(_ b: B) -> Future<(Value, B.Value)> {
        let both = Deferred<(Value, B.Value)>()
        uponInline(self) { first in
            uponInline(b) { second in both.fill(with: (first, second)) }
        }
        return Future(both)
    }

    /// A future filled with a tuple of this future's value and the values of `b`, `c`, once
    /// all are filled.
    ///
    /// The tuple is made on the thread that fills the last of them.
    @inlinable
    public func and<B: FutureProtocol, C: FutureProtocol>(_ b: B, _ c: C) -> Future<(Value, B.Value, C.Value)> {
        let combined = Deferred<(Value, B.Value, C.Value)>()
        let leading = and(b)
        uponInline(leading.and(c)) { values in
            combined.fill(with: (values.0.0, values.0.1, values.1))
        }
        return Future(combined)
    }

    /// A future filled with a tuple of this future's value and the values of `b`, `c`, `d`, once
    /// all are filled.
    ///
    /// The tuple is made on the thread that fills the last of them.
    @inlinable
    public func and<B, C, D>(
        _ b: B, _ c: C, _ d: D
    ) -> Future<(Value, B.Value, C.Value, D.Value)>
    where B: FutureProtocol, C: FutureProtocol, D: FutureProtocol {
        let combined = Deferred<(Value, B.Value, C.Value, D.Value)>()
        let leading = and(b, c)
        uponInline(leading.and(d)) { values in
            combined.fill(with: (values.0.0, values.0.1, values.0.2, values.1))
        }
        return Future(combined)
    }

    /// A future filled with a tuple of this future's value and the values of `b`, `c`, `d`, `e`, once
    /// all are filled.
    ///
    /// The tuple is made on the thread that fills the last of them.
    @inlinable
    public func and<B, C, D, E>(
        _ b: B, _ c: C, _ d: D, _ e: E
    ) -> Future<(Value, B.Value, C.Value, D.Value, E.Value)>
    where B: FutureProtocol, C: FutureProtocol, D: FutureProtocol, E: FutureProtocol {
        let combined = Deferred<(Value, B.Value, C.Value, D.Value, E.Value)>()
        let leading = and(b, c, d)
        uponInline(leading.and(e)) { values in
            combined.fill(with: (values.0.0, values.0.1, values.0.2, values.0.3, values.1))
        }
        return Future(combined)
    }

    /// A future filled with a tuple of this future's value and the values of `b`, `c`, `d`, `e`, `f`, once
    /// all are filled.
    ///
    /// The tuple is made on the thread that fills the last of them.
    @inlinable
    public func and<B, C, D, E, F>(
        _ b: B, _ c: C, _ d: D, _ e: E, _ f: F
    ) -> Future<(Value, B.Value, C.Value, D.Value, E.Value, F.Value)>
    where B: FutureProtocol, C: FutureProtocol, D: FutureProtocol, E: FutureProtocol,
        F: FutureProtocol {
        let combined = Deferred<(Value, B.Value, C.Value, D.Value, E.Value, F.Value)>()
        let leading = and(b, c, d, e)
        uponInline(leading.and(f)) { values in
            combined.fill(with: (values.0.0, values.0.1, values.0.2, values.0.3, values.0.4, values.1))
        }
        return Future(combined)
    }

    /// A future filled with a tuple of this future's value and the values of `b`, `c`, `d`, `e`, `f`, `g`, once
    /// all are filled.
    ///
    /// The tuple is made on the thread that fills the last of them.
    @inlinable
    public func and<B, C, D, E, F, G>(
        _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G
    ) -> Future<(Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value)>
    where B: FutureProtocol, C: FutureProtocol, D: FutureProtocol, E: FutureProtocol,
        F: FutureProtocol, G: FutureProtocol {
        let combined = Deferred<(Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value)>()
        let leading = and(b, c, d, e, f)
        uponInline(leading.and(g)) { values in
            combined.fill(with: (values.0.0, values.0.1, values.0.2, values.0.3, values.0.4, values.0.5, values.1))
        }
        return Future(combined)
    }

    /// A future filled with a tuple of this future's value and the values of `b`, `c`, `d`, `e`, `f`, `g`, `h`, once
    /// all are filled.
    ///
    /// The tuple is made on the thread that fills the last of them.
    @inlinable
    public func and<B, C, D, E, F, G, H>(
        _ b: B, _ c: C, _ d: D, _ e: E, _ f: F, _ g: G, _ h: H
    ) -> Future<(Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value)>
    where B: FutureProtocol, C: FutureProtocol, D: FutureProtocol, E: FutureProtocol,
        F: FutureProtocol, G: FutureProtocol, H: FutureProtocol {
        let combined = Deferred<(Value, B.Value, C.Value, D.Value, E.Value, F.Value, G.Value, H.Value)>()
        let leading = and(b, c, d, e, f, g)
        uponInline(leading.and(h)) { values in
            combined.fill(with: (
                values.0.0, values.0.1, values.0.2, values.0.3,
                values.0.4, values.0.5, values.0.6, values.1))
        }
        return Future(combined)
    }
}
