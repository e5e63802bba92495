import Foundation

// Deferred tracked a task's progress with Foundation's `Progress` on Apple platforms only; its Linux
// build, like this library, has none. These declarations say so at compile time.

extension Task {
    /// Not available: Deferred kept a task's `Progress` on Apple platforms only.
    @available(
        *, unavailable, message: "Task progress is Apple-only in Deferred; this library runs on Linux and has none"
    )
    public var progress: Progress {
        fatalError("unavailable")
    }

    /// Not available: Deferred kept a task's `Progress` on Apple platforms only.
    @available(*, unavailable, message: "Task progress is Apple-only in Deferred; use init(_:uponCancel:)")
    public convenience init(_ future: Future<Result>, progress: Progress) {
        fatalError("unavailable")
    }

    /// Not available: Deferred kept a task's `Progress` on Apple platforms only.
    @available(*, unavailable, message: "Task progress is Apple-only in Deferred; use init(succeedsFrom:uponCancel:)")
    public convenience init<Wrapped: FutureProtocol>(succeedsFrom wrapped: Wrapped, progress: Progress)
    where Wrapped.Value == Success {
        fatalError("unavailable")
    }
}
