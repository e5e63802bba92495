extension Sequence where Element: Sendable, Self: Sendable {
    /// A finite signal that gives each listener every element at once, then ends.
    ///
    /// ```swift
    /// bag += [1, 2, 3].signal().onEvent { print($0) }   // value(1), value(2), value(3), end(nil)
    /// ```
    public func signal() -> FiniteSignal<Element> {
        FiniteSignal(register: { callback in
            callback(.initial(nil))
            for element in self { callback(.event(.value(element))) }
            callback(.event(.end))
            return NilDisposer()
        })
    }
}
