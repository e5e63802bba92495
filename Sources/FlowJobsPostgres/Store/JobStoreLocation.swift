import Flow
import FlowJobs
import Foundation

/// Where a program's jobs are, as one string a command line or a configuration file gives: a
/// `postgresql://` (or `postgres://`) URL opens a ``PostgresJobStore``, anything else is the path of
/// an SQLite file. Moving from one machine to many changes this string, not the code.
///
/// ```swift
/// let store = try await JobStoreLocation.open(
///     ProcessInfo.processInfo.environment["JOBS"] ?? "jobs.sqlite", on: loop).get()
/// ```
public enum JobStoreLocation {
    /// Whether `location` is a PostgreSQL URL rather than a file path.
    public static func isPostgresURL(_ location: String) -> Bool {
        location.hasPrefix("postgresql://") || location.hasPrefix("postgres://")
    }

    /// Opens the store `location` names: PostgreSQL (on `loop`, in `schema`) or an SQLite file
    /// (created when missing).
    ///
    /// - Parameters:
    ///   - location: a `postgresql://` URL, or an SQLite file's path.
    ///   - loop: the loop that drives a PostgreSQL store's connections; it must be running.
    ///   - schema: the PostgreSQL schema of the store's tables; `flow_jobs` by default.
    ///   - clock: the store's clock; the system's by default.
    /// - Returns: the store once open; fails with the error of the store's opening.
    public static func open(
        _ location: String, on loop: EventLoop, schema: String = "flow_jobs", clock: JobClock = .system
    ) -> Future<any JobStore> {
        if isPostgresURL(location) {
            return PostgresJobStore.open(
                url: location, on: loop, configuration: .init(clock: clock, schema: schema)
            ).map(on: .none) { $0 as any JobStore }
        }
        do {
            return Future(try SQLiteJobStore(path: location, configuration: .init(clock: clock)) as any JobStore)
        } catch {
            return Future(error: error)
        }
    }
}
