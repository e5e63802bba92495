/// The error of a future that did not complete in time: see ``Flow/Future/timeout(on:after:error:)``.
///
/// ```swift
/// fetchProfile().timeout(after: 10).onError { error in
///     if error is TimeoutError { showOfflineBanner() }
/// }
/// ```
public struct TimeoutError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The time allowed, in seconds.
    public let delay: Double

    /// Creates the error for a limit of `delay` seconds.
    public init(delay: Double) {
        self.delay = delay
    }

    /// "timed out after 10.0 s".
    public var description: String { "timed out after \(delay) s" }
}
