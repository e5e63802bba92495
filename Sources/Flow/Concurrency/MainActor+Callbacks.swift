/// Where a callback runs when it is main-actor code: on the main loop, as the main actor.
///
/// Work the main loop runs is main-actor work (the main loop, `DispatchQueue.main` and the main actor
/// are one serial context), so a callback on ``Scheduler/main`` may touch main-actor state. Swift 6
/// only knows that when the callback's type says so: pass `on: .mainActor`, and the closure is
/// `@MainActor`. It can then update the top-level `var`s of a `main.swift`, or any `@MainActor` state,
/// with no box and no warning:
///
/// ```swift
/// var attempts = 0                       // top-level: main-actor state in Swift 6
///
/// fetchReport()
///     .onError(on: .mainActor) { _ in attempts += 1 }
///     .onValue(on: .mainActor) { report in print("after \(attempts) failures: \(report)") }
///
/// bag += connections.onValue(on: .mainActor) { count in status = "\(count) open" }
/// ```
///
/// The callback runs on ``Scheduler/main``, exactly as with `on: .main`; only its type differs.
public struct MainActorScheduler: Sendable {
    /// The main actor, as the place a callback runs.
    public static let mainActor = MainActorScheduler()

    /// The scheduler the callbacks run on: ``Scheduler/main``.
    public var scheduler: Scheduler { .main }
}

/// Moves a value into code that runs on the same thread right away (main-actor code run from the main
/// loop's work): nothing crosses a thread, so it need not be `Sendable`.
@usableFromInline
struct SameThreadTransfer<Value>: @unchecked Sendable {
    // @unchecked Sendable: made and consumed within one synchronous call on one thread.
    @usableFromInline var value: Value

    @inlinable
    init(_ value: Value) { self.value = value }
}

/// Runs main-actor `body` from the main loop's work, which is main-actor work.
@inlinable
func runAsMainActor<T>(_ body: @MainActor () throws -> T) rethrows -> T {
    try MainActor.assumeIsolated { SameThreadTransfer(try body()) }.value
}

extension Future {
    /// Runs main-actor `callback` with the value if the future succeeds, on the main loop: as
    /// `onValue(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onValue(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor (Value) throws -> Void
    ) -> Future<Value> {
        onValue(on: mainActor.scheduler, file: file, line: line) { value in
            let transfer = SameThreadTransfer(value)
            try runAsMainActor { try callback(transfer.value) }
        }
    }

    /// Runs main-actor `callback` with the error if the future fails, on the main loop: as
    /// `onError(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onError(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor (Error) throws -> Void
    ) -> Future<Value> {
        onError(on: mainActor.scheduler, file: file, line: line) { error in
            try runAsMainActor { try callback(error) }
        }
    }

    /// Runs main-actor `callback` with the result once the future completes, on the main loop: as
    /// `onResult(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onResult(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor (Result<Value>) throws -> Void
    ) -> Future<Value> {
        onResult(on: mainActor.scheduler, file: file, line: line) { result in
            let transfer = SameThreadTransfer(result)
            try runAsMainActor { try callback(transfer.value) }
        }
    }

    /// Runs main-actor `callback` if the returned future is cancelled, on the main loop: as
    /// `onCancel(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func onCancel(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor () -> Void
    ) -> Future<Value> {
        onCancel(on: mainActor.scheduler, file: file, line: line) { runAsMainActor(callback) }
    }

    /// Runs main-actor `callback` once the future completes or is cancelled, on the main loop: as
    /// `always(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func always(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ callback: @escaping @MainActor () -> Void
    ) -> Future<Value> {
        always(on: mainActor.scheduler, file: file, line: line) { runAsMainActor(callback) }
    }

    /// A future with main-actor `transform` applied to the value, on the main loop: as
    /// `map(on: .main)`, for code that reads or updates main-actor state (see ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func map<Other>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Value) throws -> Other
    ) -> Future<Other> {
        map(on: mainActor.scheduler, file: file, line: line) { value in
            let transfer = SameThreadTransfer(value)
            return try runAsMainActor { SameThreadTransfer(try transform(transfer.value)) }.value
        }
    }

    /// A future that completes like the future main-actor `transform` returns for the value, on the
    /// main loop: as `flatMap(on: .main)`, for code that reads or updates main-actor state (see
    /// ``MainActorScheduler``).
    @inlinable
    @discardableResult
    public final func flatMap<Other>(
        on mainActor: MainActorScheduler, file: StaticString = #fileID, line: UInt = #line,
        _ transform: @escaping @MainActor (Value) throws -> Future<Other>
    ) -> Future<Other> {
        flatMap(on: mainActor.scheduler, file: file, line: line) { value in
            let transfer = SameThreadTransfer(value)
            return try runAsMainActor { try transform(transfer.value) }
        }
    }
}

extension SignalProvider {
    /// Runs main-actor `callback` with each value signalled from now on, on the main loop: as
    /// `onValue(on: .main)`, for code that updates main-actor state (see ``MainActorScheduler``).
    ///
    /// - Returns: a disposable that stops listening; keep it, since letting go of it stops listening too.
    @inlinable
    public func onValue(on mainActor: MainActorScheduler, _ callback: @escaping @MainActor (Value) -> Void) -> Disposable {
        onValue(on: mainActor.scheduler) { value in
            let transfer = SameThreadTransfer(value)
            runAsMainActor { callback(transfer.value) }
        }
    }
}
