/// Something that can be enabled and disabled, such as a control.
///
/// ```swift
/// final class SubmitButton: Enablable {
///     var isEnabled = true
/// }
///
/// let restore = button.disable()   // disabled while the upload runs
/// upload().always { restore.dispose() }
/// ```
public protocol Enablable: AnyObject {
    /// Whether it is enabled.
    var isEnabled: Bool { get set }
}

extension Enablable {
    /// Disables it, and returns a disposable that sets `isEnabled` back to what it was before.
    ///
    /// ```swift
    /// bag += button.disable()
    /// ```
    ///
    /// The disposable restores the value on the thread that disposes it: dispose it where the object
    /// may be used.
    public func disable() -> Disposable {
        replaceIsEnabled(with: false)
    }

    /// Enables it, and returns a disposable that sets `isEnabled` back to what it was before.
    ///
    /// ```swift
    /// bag += button.enable()
    /// ```
    public func enable() -> Disposable {
        replaceIsEnabled(with: true)
    }

    private func replaceIsEnabled(with isEnabled: Bool) -> Disposable {
        let previous = self.isEnabled
        self.isEnabled = isEnabled
        // The object is used only where its owner disposes: the thread it was handed to.
        let object = UncheckedSendable(self as any Enablable)
        return Disposer { object.value.isEnabled = previous }
    }
}

extension SignalProvider where Kind == ReadWrite, Value == Bool {
    /// Sets the value to `false`, and returns a disposable that sets it back to what it was before.
    ///
    /// ```swift
    /// let isEditable = ReadWriteSignal(true)
    /// bag += isEditable.disable()   // true again once the bag is disposed
    /// ```
    public func disable() -> Disposable {
        replaceValue(with: false)
    }

    /// Sets the value to `true`, and returns a disposable that sets it back to what it was before.
    ///
    /// ```swift
    /// bag += isBusy.enable()
    /// ```
    public func enable() -> Disposable {
        replaceValue(with: true)
    }

    private func replaceValue(with value: Bool) -> Disposable {
        let signal = providedSignal
        let previous = signal.value
        signal.value = value
        return Disposer { signal.value = previous }
    }
}
