// In a file that imports `Deferred` (or `Task`), `Task` names Deferred's type, so Swift's static
// helpers written as `Task.sleep(...)` would not be found. These forward to Swift's, with a warning
// that names the spelling that always works: `_Concurrency.Task`.

extension Task where Success == Never {
    /// Suspends the current Swift task for at least `duration` nanoseconds: Swift's
    /// `_Concurrency.Task.sleep(nanoseconds:)`.
    @available(*, deprecated, message: "in a file that imports Deferred, write _Concurrency.Task.sleep")
    public static func sleep(nanoseconds duration: UInt64) async throws {
        try await _Concurrency.Task.sleep(nanoseconds: duration)
    }

    /// Suspends the current Swift task for at least `duration`: Swift's `_Concurrency.Task.sleep(for:)`.
    @available(*, deprecated, message: "in a file that imports Deferred, write _Concurrency.Task.sleep")
    public static func sleep(for duration: Duration) async throws {
        try await _Concurrency.Task.sleep(for: duration)
    }

    /// Lets other Swift tasks run: Swift's `_Concurrency.Task.yield()`.
    @available(*, deprecated, message: "in a file that imports Deferred, write _Concurrency.Task.yield")
    public static func yield() async {
        await _Concurrency.Task.yield()
    }

    /// Throws `CancellationError` if the current Swift task was cancelled: Swift's
    /// `_Concurrency.Task.checkCancellation()`.
    @available(*, deprecated, message: "in a file that imports Deferred, write _Concurrency.Task.checkCancellation")
    public static func checkCancellation() throws {
        try _Concurrency.Task.checkCancellation()
    }
}
