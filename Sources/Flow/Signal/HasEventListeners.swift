/// Something that knows whether anyone listens to its events, such as a control with targets.
///
/// ```swift
/// final class Button: Enablable, HasEventListeners {
///     var isEnabled = true
///     let taps = Callbacker<Void>()
///     var hasEventListeners: Bool { !taps.isEmpty }
/// }
/// ```
public protocol HasEventListeners: AnyObject {
    /// Whether it has event listeners now.
    var hasEventListeners: Bool { get }
}

/// Something that can list the parts of it that can be disabled and have event listeners, such as a
/// screen and its controls: ``disableActiveEventListeners()`` disables them all at once.
///
/// ```swift
/// extension CheckoutScreen: HasEnablableEventListeners {
///     var enablableEventListeners: [Enablable & HasEventListeners] { [payButton, cancelButton] }
/// }
///
/// let restore = screen.disableActiveEventListeners()   // while the payment runs
/// pay().always { restore.dispose() }
/// ```
public protocol HasEnablableEventListeners {
    /// The parts that can be disabled and have event listeners.
    var enablableEventListeners: [Enablable & HasEventListeners] { get }
}

extension HasEnablableEventListeners {
    /// Disables every part that has event listeners and is enabled now.
    ///
    /// ```swift
    /// bag += screen.disableActiveEventListeners()
    /// ```
    ///
    /// - Returns: a disposable that enables them again.
    public func disableActiveEventListeners() -> Disposable {
        let active = enablableEventListeners.filter { $0.hasEventListeners && $0.isEnabled }
        return DisposeBag(active.map { $0.disable() })
    }
}
