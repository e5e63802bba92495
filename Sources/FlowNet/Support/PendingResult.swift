import Flow
import Synchronization

/// A result that loop code reports later, handed out as a ``Future``.
///
/// libuv reports through callbacks; this joins such a callback to a future whatever the order: the
/// result may arrive before or after the future's operation has run.
///
/// It is also the future's disposable: the future keeps its operation (which refers to this object)
/// for as long as it lives, so disposing drops the completion this object holds, or a future
/// cancelled before its result came would keep itself alive through it.
package final class PendingResult<Value: Sendable>: Disposable, Sendable {
    private struct State {
        var result: Result<Value>?
        var completion: (@Sendable (Result<Value>) -> Void)?
        var onCancel: (@Sendable () -> Void)?
    }

    private let state = Locked(State())

    package init() {}

    /// Whether ``complete(_:)`` has been called.
    package var isCompleted: Bool { state.withLock { $0.result != nil } }

    /// A future completed by ``complete(_:)``. `onCancel` runs if the future is cancelled while the
    /// result is still outstanding (on the cancelling thread).
    package func future(
        file: StaticString = #fileID, line: UInt = #line, onCancel: (@Sendable () -> Void)? = nil
    ) -> Future<Value> {
        // Failing if abandoned: a result that is dropped unreported fails the future rather than
        // leaving it pending.
        Future.failingIfAbandoned(on: .none, file: file, line: line) { [self] completion in
            let early = state.withLock { state -> Result<Value>? in
                if let result = state.result { return result }
                state.completion = completion
                state.onCancel = onCancel
                return nil
            }
            if let early { completion(early) }
            return self
        }
    }

    /// Run by the future once it completes or is cancelled: drops the completion, and runs `onCancel`
    /// if the result is still outstanding (a cancellation).
    package func dispose() {
        let onCancel = state.withLock { state -> (@Sendable () -> Void)? in
            let onCancel = state.result == nil ? state.onCancel : nil
            state.completion = nil
            state.onCancel = nil
            return onCancel
        }
        onCancel?()
    }

    /// Completes the future unless already completed.
    package func complete(_ result: Result<Value>) {
        let completion = state.withLock { state -> (@Sendable (Result<Value>) -> Void)? in
            guard state.result == nil else { return nil }
            state.result = result
            let completion = state.completion
            state.completion = nil
            return completion
        }
        completion?(result)
    }

    package func succeed(_ value: Value) { complete(.success(value)) }

    package func fail(_ error: Error) { complete(.failure(error)) }
}
