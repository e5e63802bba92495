/// Holds at most one delegate callback `(Arg) -> Ret` and manages its lifetime: what Flow calls a
/// delegate, in place of a weak `delegate` property.
///
/// `set` installs the callback and returns a disposable that removes it; setting another one first
/// removes the previous one. `call` calls the callback that is set, if any.
///
/// ```swift
/// final class Picker {
///     let shouldSelect = Delegate<Int, Bool>()
///
///     func tap(row: Int) {
///         if shouldSelect.call(row) ?? true { select(row) }
///     }
/// }
///
/// bag += picker.shouldSelect.set { row in row != 0 }   // removed when the bag is disposed
/// ```
///
/// Thread-safe: the callback is set, removed and called from any thread; it runs outside the
/// delegate's lock, so it may itself set or remove the delegate's callback.
public final class Delegate<Arg, Ret>: Sendable {
    private struct Installed: Sendable {
        let callback: @Sendable (Arg) -> Ret
        let disposable: Disposable
        let serial: UInt64
    }

    private struct State: Sendable {
        var current: Installed?
        /// Tells a registration from a later one, so that removing an old one leaves the current one
        /// in place.
        var nextSerial: UInt64 = 0
    }

    private let onSet: @Sendable (@escaping @Sendable (Arg) -> Ret) -> Disposable
    private let state = Locked(State())

    /// Creates a delegate with no callback set.
    ///
    /// - Parameter onSet: called with each callback as it is set; the disposable it returns is
    ///   disposed when that callback is removed (e.g. to start and stop observing something only
    ///   while a callback is set). By default it does nothing.
    ///
    /// ```swift
    /// let didScroll = Delegate<Double, Void>(onSet: { _ in
    ///     startTracking()
    ///     return Disposer { stopTracking() }
    /// })
    /// ```
    @preconcurrency
    public init(
        onSet: @escaping @Sendable (@escaping @Sendable (Arg) -> Ret) -> Disposable = { _ in NilDisposer() }
    ) {
        self.onSet = onSet
    }

    /// Sets the callback `call` calls, removing the one set before (whose disposable is disposed).
    ///
    /// ```swift
    /// bag += picker.shouldSelect.set { row in row.isMultiple(of: 2) }
    /// ```
    ///
    /// - Returns: a disposable that removes this callback, if it is still the one set.
    @preconcurrency
    public func set(_ callback: @escaping @Sendable (Arg) -> Ret) -> Disposable {
        let previous = state.withLock { state -> Installed? in
            defer { state.current = nil }
            return state.current
        }
        previous?.disposable.dispose()

        let bag = DisposeBag()
        bag += onSet(callback)
        let serial = state.withLock { state -> UInt64 in
            defer { state.nextSerial += 1 }
            return state.nextSerial
        }
        bag += { [weak self] in self?.remove(serial) }
        let replaced = state.withLock { state -> Installed? in
            defer { state.current = Installed(callback: callback, disposable: bag, serial: serial) }
            return state.current
        }
        // Another thread set a callback meanwhile: this one wins, as the last one set.
        replaced?.disposable.dispose()
        return bag
    }

    /// Whether a callback is set.
    ///
    /// ```swift
    /// if !picker.shouldSelect.isSet { selectAll() }
    /// ```
    public var isSet: Bool {
        state.withLock { $0.current != nil }
    }

    /// Calls the callback that is set with `arg`.
    ///
    /// ```swift
    /// let allowed = shouldSelect.call(row) ?? true
    /// ```
    ///
    /// - Returns: what the callback returned, or `nil` if no callback is set.
    public func call(_ arg: Arg) -> Ret? {
        let callback = state.withLock { $0.current?.callback }
        return callback?(arg)
    }

    private func remove(_ serial: UInt64) {
        let removed = state.withLock { state -> Installed? in
            guard let installed = state.current, installed.serial == serial else { return nil }
            state.current = nil
            return installed
        }
        _ = removed  // its callback is released after the lock
    }
}

extension Delegate where Arg == Void {
    /// Calls the callback that is set.
    ///
    /// ```swift
    /// let title = titleProvider.call() ?? "Untitled"
    /// ```
    ///
    /// - Returns: what the callback returned, or `nil` if no callback is set.
    public func call() -> Ret? {
        call(())
    }
}
