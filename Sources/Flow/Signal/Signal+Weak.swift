import Synchronization

/// `with(weak:)`: pairing each value with an object held weakly, as Flow spells it, to break
/// reference cycles between an object and the signals it listens to.
extension SignalProvider {
    /// Each value paired with `object`, as long as `object` lives: the first event after `object` was
    /// freed ends the listening instead (the listener is disposed). The signal keeps its current value
    /// if it has one, paired with `object` too.
    ///
    /// ```swift
    /// bag += updates.with(weak: self).onValue { update, controller in controller.apply(update) }
    /// ```
    ///
    /// ```
    /// a)-------b-------c---(object freed)---d---
    ///     with(weak: object)
    /// (a,o))---(b,o)---(c,o)----------------|
    /// ```
    ///
    /// Flow also stops at the moment `object` is freed, through the Objective-C runtime; here the stop
    /// comes with the next event.
    @preconcurrency
    public func with<Object: AnyObject & Sendable>(weak object: Object) -> CoreSignal<Kind.DropWrite, (Value, Object)> {
        paired(weaklyWith: object)
    }

    /// `with(weak:)` under a name the tuple overloads cannot shadow.
    func paired<Object: AnyObject & Sendable>(weaklyWith object: Object) -> CoreSignal<Kind.DropWrite, (Value, Object)> {
        let signal = providedSignal
        let reference = WeakReference(object)
        return CoreSignal(register: { callback in
            let hasEnded = Atomic<Bool>(false)
            return signal.register { eventType in
                guard !hasEnded.load(ordering: .acquiring) else { return }
                guard let object = reference.object else {
                    guard !hasEnded.exchange(true, ordering: .acquiringAndReleasing) else { return }
                    if case .initial = eventType { callback(.initial(nil)) }
                    callback(.event(.end))
                    return
                }
                switch eventType {
                case .initial(nil): callback(.initial(nil))
                case .initial(let value?): callback(.initial((value, object)))
                case .event(.value(let value)): callback(.event(.value((value, object))))
                case .event(.end(let error)):
                    hasEnded.store(true, ordering: .releasing)
                    callback(.event(.end(error)))
                }
            }
        })
    }
}

extension SignalProvider where Value == Void {
    /// `object` each time the signal signals, as long as `object` lives (see `with(weak:)`).
    ///
    /// ```swift
    /// bag += refreshTaps.with(weak: self).onValue { controller in controller.refresh() }
    /// ```
    @preconcurrency
    public func with<Object: AnyObject & Sendable>(weak object: Object) -> CoreSignal<Kind.DropWrite.DropWrite, Object> {
        paired(weaklyWith: object).map(on: .none) { $1 }
    }
}

extension SignalProvider {
    /// Each pair of values with `object` appended, as long as `object` lives (see `with(weak:)`).
    ///
    /// ```swift
    /// bag += combineLatest(name, age).with(weak: self).onValue { name, age, controller in ... }
    /// ```
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable>(
        weak object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, Object)> where Value == (A, B) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $1) }
    }

    /// Each triple of values with `object` appended, as long as `object` lives (see `with(weak:)`).
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable, C: Sendable>(
        weak object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, C, Object)> where Value == (A, B, C) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $0.2, $1) }
    }

    /// Each tuple of 4 values with `object` appended, as long as `object` lives (see `with(weak:)`):
    /// Flow spells this one without the `weak:` label.
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable, C: Sendable, D: Sendable>(
        _ object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, C, D, Object)> where Value == (A, B, C, D) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $0.2, $0.3, $1) }
    }

    /// Each tuple of 5 values with `object` appended, as long as `object` lives (see `with(weak:)`):
    /// Flow spells this one without the `weak:` label.
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable>(
        _ object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, C, D, E, Object)> where Value == (A, B, C, D, E) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $0.2, $0.3, $0.4, $1) }
    }

    /// Each tuple of 6 values with `object` appended, as long as `object` lives (see `with(weak:)`):
    /// Flow spells this one without the `weak:` label.
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable, F: Sendable>(
        _ object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, C, D, E, F, Object)> where Value == (A, B, C, D, E, F) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $0.2, $0.3, $0.4, $0.5, $1) }
    }

    /// Each tuple of 7 values with `object` appended, as long as `object` lives (see `with(weak:)`):
    /// Flow spells this one without the `weak:` label.
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable, F: Sendable, G: Sendable>(
        _ object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, C, D, E, F, G, Object)> where Value == (A, B, C, D, E, F, G) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $0.2, $0.3, $0.4, $0.5, $0.6, $1) }
    }

    /// Each tuple of 8 values with `object` appended, as long as `object` lives (see `with(weak:)`):
    /// Flow spells this one without the `weak:` label.
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable, F: Sendable, G: Sendable, H: Sendable>(
        _ object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, C, D, E, F, G, H, Object)> where Value == (A, B, C, D, E, F, G, H) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $0.2, $0.3, $0.4, $0.5, $0.6, $0.7, $1) }
    }

    /// Each tuple of 9 values with `object` appended, as long as `object` lives (see `with(weak:)`):
    /// Flow spells this one without the `weak:` label.
    @preconcurrency
    public func with<Object: AnyObject & Sendable, A: Sendable, B: Sendable, C: Sendable, D: Sendable, E: Sendable, F: Sendable, G: Sendable, H: Sendable, I: Sendable>(
        _ object: Object
    ) -> CoreSignal<Kind.DropWrite.DropWrite, (A, B, C, D, E, F, G, H, I, Object)> where Value == (A, B, C, D, E, F, G, H, I) {
        paired(weaklyWith: object).map(on: .none) { ($0.0, $0.1, $0.2, $0.3, $0.4, $0.5, $0.6, $0.7, $0.8, $1) }
    }
}

/// A weak reference that can cross threads: the object is `Sendable`, and the runtime makes weak
/// loads and stores atomic.
final class WeakReference<Object: AnyObject & Sendable>: Sendable {
    weak let object: Object?
    init(_ object: Object) { self.object = object }
}
